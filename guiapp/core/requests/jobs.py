"""The requests of ``guiapp generate``, ``predict`` and ``export``: every option, once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import SEED_MAX
from .base import Request, opt

# ----------------------------------------------------------------------------- the jobs
_FILE_INPUT = "file input (as for guiapp import)"


@dataclass(frozen=True, kw_only=True)
class GenerateRequest(Request):
    """``guiapp generate``: every option, once (docs/GENERATION.md says what each does)."""

    COMMAND: ClassVar[str] = "generate"

    out: str = opt(
        positional=True,
        path=True,
        help="the dataset's index file OUT.h5 (shards go to OUT.shards/)",
    )
    generator: str = opt("patterns2d", help="patterns2d, kmer1d, genomes or FILE.py")
    n: int | None = opt(
        None,
        help="rows to write (after augmentation; genomes: reads)",
        minimum=1,
        problem="give the number of rows to generate (at least 1)",
    )
    classes: int | None = opt(
        None,
        help="number of classes (default 5)",
        minimum=1,
        problem="a dataset needs at least 1 class",
        fix="give 1..65535",
    )
    #: ``25x25`` or ``126`` (as typed on the command line)
    shape: str | None = opt(None, help="sample shape, e.g. 25x25 or 126")
    dtype: str | None = opt(None, help="float32 | float16 | uint16 | ...")
    seed: int = opt(
        0,
        help="random seed (default 0)",
        minimum=0,
        maximum=SEED_MAX,
        problem=f"a seed is an integer in 0..{SEED_MAX}",
        fix="give e.g. 0",
    )
    workers: int = opt(1, help="worker processes (default 1)", minimum=1, problem="give at least 1")
    #: a spec file's path or the spec: inline JSON text, or (in a request file) the object
    augment: str | dict[str, Any] | None = opt(
        None, help="augmentation spec: SPEC.json or inline JSON"
    )
    #: JSON text (command line) or (in a request file) the object
    params: str | dict[str, Any] | None = opt(None, help="generator parameters as a JSON object")
    shard_rows: int | None = opt(
        None,
        help="rows per shard",
        minimum=1,
        problem="a shard holds at least 1 row",
        fix="give e.g. 4096, or leave it out",
    )
    on_nonfinite: str = opt(
        "error",
        choices=("error", "skip"),
        help="rows holding NaN/Inf: refuse them (default) or drop them, counted in the provenance",
        problem="unknown policy",
        fix="use error or skip",
    )
    events: str | None = opt(None, run=True, help="'-' to print JSON-line events on stdout")
    plan: bool = opt(False, run=True, help="print the plan and write nothing")
    resume: bool = opt(False, run=True, help="finish an unfinished dataset")
    overwrite: bool = opt(False, run=True, help="replace an existing dataset")


@dataclass(frozen=True, kw_only=True)
class PredictRequest(Request):
    """``guiapp predict``: every option, once."""

    COMMAND: ClassVar[str] = "predict"

    model: str = opt(path=True, help="a run folder or a MODEL.keras file")
    which: str = opt("best", choices=("best", "last"), help="a run's model")
    data: str = opt(
        path=True,
        help="dataset NAME.h5, a JSONL/CSV/TSV/npy/npz file, or genomes: FASTA/FASTQ[.gz] "
        "or a manifest TSV (file, class, group)",
    )
    out: str = opt(path=True, help="PRED.h5 (any size) or PRED.csv (small results)")
    split: str = opt("all", choices=("all", "train", "val", "test"))
    top_k: int = opt(
        5, help="classes kept per row (default 5)", minimum=1, problem="give at least 1"
    )
    probs: bool = opt(False, help="also keep the full probability vector")
    batch: int = opt(
        512,
        help="batch size per device (default 512)",
        minimum=1,
        problem="the batch size must be at least 1",
    )
    devices: str = opt("auto", help="auto, cpu, cpu:N, gpu or gpu:0,1")
    overwrite: bool = opt(False, run=True, help="replace another job's --out")
    #: ``a,b,c`` (command line) or (in a request file) the list
    class_names: str | list[str] | None = opt(
        None, help="file input without a run folder: the model's classes"
    )
    ignore_class_names: bool = opt(
        False,
        help="compare labels with predictions by class index although the dataset's class "
        "names differ from the model's",
    )
    #: ``spot=blob,bar=edge`` (command line) or (in a request file) the object
    class_map: str | dict[str, str] | None = opt(
        None,
        metavar="DATA=MODEL,...",
        help="the dataset's class names the model calls otherwise, e.g. spot=blob,bar=edge: "
        "labels are compared in the model's classes",
    )
    aggregate_by: str | None = opt(
        None,
        metavar="FIELD",
        help="also write PRED.groups.csv: per group (FIELD: group or a kept field) its rows, "
        "class by mean probability, class by vote, agreement and true class",
    )
    min_confidence: float = opt(
        0.0,
        metavar="P",
        help="with --aggregate-by: groups whose class's mean probability is below P are "
        "unclassified (default 0: never)",
        minimum=0.0,
        maximum=1.0,
        problem="is not a probability in [0, 1]",
        fix="give e.g. 0.6",
    )
    rc_average: bool = opt(
        False,
        help="1-D k-mer rows: average each row's probabilities with its reverse's (with "
        "canonical k-mers, the read's reverse complement)",
    )
    #: JSON text (command line) or (in a request file) the object
    genome_params: str | dict[str, Any] | None = opt(
        None,
        metavar="JSON",
        help='genome input: how rows are cut, e.g. \'{"mode": "tiling", "stride": 63}\' '
        "(the tokenizer is always the run's)",
    )
    format: str | None = opt(
        None, group=_FILE_INPUT, help="jsonl, csv, tsv, npy or npz (default: from the name)"
    )
    label_field: str = opt("label", group=_FILE_INPUT)
    data_field: str = opt("data", group=_FILE_INPUT)
    x_key: str = opt("x", group=_FILE_INPUT)
    y_key: str = opt("y", group=_FILE_INPUT)
    length: int | None = opt(
        None, group=_FILE_INPUT, help="pad or cut 1-D rows (default: the model's length)"
    )
    on_error: str = opt("abort", group=_FILE_INPUT, choices=("abort", "skip"))
    group_field: str | None = opt(
        None,
        group=_FILE_INPUT,
        metavar="FIELD",
        help="each record's group (as guiapp import; the file is then imported whole, "
        "shuffled, and every prediction carries its group)",
    )
    #: ``a,b`` (command line) or (in a request file) the list
    keep_fields: str | list[str] | None = opt(
        None,
        group=_FILE_INPUT,
        metavar="A,B",
        help="fields kept per record (as guiapp import), e.g. _id: in every prediction",
    )
    commit_rows: int = opt(1 << 16, hidden=True, minimum=1)
    events: str | None = opt(None, run=True, help="'-' to print JSON-line events on stdout")


@dataclass(frozen=True, kw_only=True)
class ExportRequest(Request):
    """``guiapp export``: every option, once."""

    COMMAND: ClassVar[str] = "export"

    run: str = opt(positional=True, path=True, help="a run folder (or a MODEL.keras file)")
    format: str = opt(choices=("keras", "savedmodel", "tflite"))
    out: str | None = opt(None, path=True, help="where to write (default RUN_DIR/export/model.*)")
    which: str = opt("best", choices=("best", "last"), help="a run's model")
    rows: int = opt(
        256, help="rows compared after the reload", minimum=1, problem="compare at least 1 row"
    )
