"""Predict genomes directly: FASTA/FASTQ files (or a manifest of them) tokenised with
exactly the run's tokenizer, as a dataset whose rows carry their genome as group.

The run's tokenizer (k, canonical, encoding, vocabulary and row length) is the one its
dataset was generated with: ``config.json`` records it (``dataset.tokenizer``, from the
dataset's provenance), else it is read from the run's dataset. ``--genome-params`` may
choose how rows are cut (``mode``, ``stride``, ``strand``, ``non_acgt``, ``short``, ...)
but not a different tokenizer: that is refused in one line, since the model knows only
the tokens it was trained on. FASTA genomes are tiled (a row every ``length`` bases, both
strands' tokens are the same with canonical k-mers), FASTQ reads are taken as they are.
The dataset is built once beside the output (``.PRED.h5.input/``) by the genomes source's
own job, and reused by a resumed predict when the input and options are the same.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..errors import FileError, OptionError, UserError
from ..events import CancelToken, EventSink
from ..genomes.manifest import read_manifest
from ..genomes.seqfile import is_sequence_file
from ..genomes.source import TOKENIZER_KEYS, dataset_tokenizer
from .source import ModelSource

#: The kept fields of a genome input's rows (besides ``group``, the genome).
GENOME_FIELDS = ("file", "contig", "position", "strand")
#: ``--format`` naming a manifest of genome files (a .tsv/.csv is read as a table otherwise).
GENOMES_FORMAT = "genomes"


def is_genome_input(path: Path, fmt: str | None = None) -> bool:
    """A FASTA/FASTQ file, a folder of class folders, or a manifest of genome files (a
    .tsv/.csv whose header starts with ``file``, or any with ``--format genomes``)."""
    if fmt == GENOMES_FORMAT or is_sequence_file(path) or path.is_dir():
        return True
    if path.suffix.lower() in (".tsv", ".csv") and path.is_file() and not fmt:
        with open(path, "rb") as f:
            head = f.readline().decode("utf-8", "replace").strip().lower()
        return head.split("\t" if "\t" in head else ",")[0] in ("file", "path", "fasta")
    return False


def run_tokenizer(source: ModelSource) -> dict[str, Any]:
    """The run's tokenizer, or a UserError saying why there is none."""
    rec = source.dataset.get("tokenizer")
    if rec:
        return dict(rec)
    path = source.dataset.get("path")
    if source.run_dir is None or not path:
        raise UserError(
            f"{source.path}: a bare model file does not say how its reads were tokenised; "
            "give its run folder"
        )
    from ..store import Dataset

    try:
        with Dataset(path) as ds:
            tok = dataset_tokenizer(ds.provenance, ds.sample_shape)
    except (OSError, UserError):
        raise FileError(
            path,
            "the run's dataset cannot be read, and the run does not record its tokenizer",
            "Put the dataset back where the run found it",
        ) from None
    if tok is None:
        raise UserError(
            f"{source.run_dir}: the run was not trained on a genomes dataset (made by "
            "guiapp generate --generator genomes), so it has no tokenizer for FASTA/FASTQ"
        )
    return tok


def genome_params(tok: dict[str, Any], asked: dict[str, Any], fastq_only: bool) -> dict[str, Any]:
    """The genomes source's parameters for predicting: the run's tokenizer, and how rows
    are cut (``asked`` may not change the tokenizer)."""
    for key in TOKENIZER_KEYS:
        if key in asked and asked[key] != tok[key]:
            run = ", ".join(f"{k} {tok[k]}" for k in TOKENIZER_KEYS)
            raise OptionError(
                "genome-params",
                f"{key} {json.dumps(asked[key])}",
                f"the run's tokenizer has {run}: the model knows only its tokens",
                f"leave {key} out (the run's tokenizer is used)",
            )
    params: dict[str, Any] = {
        "mode": "reads" if fastq_only else "tiling",
        "strand": "forward",
        **{k: v for k, v in asked.items() if k not in TOKENIZER_KEYS},
    }
    params.update({k: tok[k] for k in TOKENIZER_KEYS})
    return params


def genomes_as_dataset(
    src: Path,
    out: Path,
    *,
    source: ModelSource,
    class_names: list[str],
    asked: dict[str, Any],
    sink: EventSink,
    cancel: CancelToken,
) -> Path:
    """The dataset of ``src``'s reads or tiles (built once, then reused)."""
    from ..generate.job import generate
    from ..generate.spec import genomes_config
    from .file_input import input_folder, reuse_input, save_note

    tok = run_tokenizer(source)
    entries = read_manifest(src, need_class=False)
    labelled = [e for e in entries if e.label]
    if labelled and len(labelled) != len(entries):
        e = next(e for e in entries if not e.label)
        raise FileError(
            f"{src}, line {e.line}", "names no class", "Give every file a class, or none"
        )
    fastq_only = all(".fq" in Path(e.file).name or ".fastq" in Path(e.file).name for e in entries)
    params = genome_params(tok, asked, fastq_only)
    params["manifest"] = str(src)
    params["class_names"] = list(class_names) if labelled else ["unknown"]
    cfg = genomes_config(
        None, 0, (int(tok["length"]),), None, params, None, None, "error", None, need_class=False
    )
    folder = input_folder(out)
    target = folder / "input.h5"
    note = {"src": str(Path(src).resolve()), "config": cfg.to_json()}
    if reuse_input(folder, target, note):
        return target

    def forward(e: dict[str, Any]) -> None:
        if e["event"] == "progress":
            sink.emit(
                "progress",
                job="predict",
                phase="read input",
                done=e["rows_done"],
                total=e["rows_total"],
            )

    inner = EventSink()
    inner.listeners.append(forward)
    try:
        result = generate(cfg, target, workers=1, sink=inner, cancel=cancel, overwrite=True)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if result.get("status") != "finished":
        cancel.raise_if_cancelled()
    save_note(folder, note)
    return target
