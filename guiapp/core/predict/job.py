"""``run_predict``: a model over every row of a dataset split or an importable file.

Started -> (input file converted, once) -> table created or resumed -> batches in dataset
order through the model, committed as they come, with ``progress`` events (rows/s, ETA)
-> (with ``aggregate_by``, the per-group table ``PRED.groups.csv``, computed from the
table) -> ``finished`` with the summary, or ``stopped`` (``stop`` on stdin, SIGINT, SIGTERM).
Running the same command again continues a stopped or killed job from its last commit;
a table made by another model, dataset or setting is refused unless ``overwrite``.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FileError, OptionError, UserError
from ..events import CancelToken, EventSink, RateMeter
from ..store import Dataset
from ..store.format import FORMAT_NAME as DATASET_FORMAT
from .engine import COMMIT_ROWS, make_heads, pipeline_for, predict_into
from .file_input import file_as_dataset, guess_format
from .genome_input import GENOME_FIELDS, genomes_as_dataset, is_genome_input
from .groups import DatasetFields, aggregate, groups_path
from .output import summarize, write_csv
from .source import (
    ModelSource,
    RowRanges,
    dataset_hash,
    plan_rows,
    resolve_model,
    split_plan,
)
from .table import TableSpec, TableWriter, create_table, read_identity

#: CSV output is for small results; larger ones go to HDF5.
MAX_CSV_ROWS = 2_000_000


@dataclass
class PredictConfig:
    model: str
    data: str
    out: str
    split: str = "all"
    top_k: int = 5
    probs: bool = False
    batch: int = 512  # per device
    devices: str = "auto"
    which: str = "best"
    overwrite: bool = False
    commit_rows: int = COMMIT_ROWS
    #: For file input: format, label_field, data_field, x_key, y_key, length, dtype, ...
    input: dict[str, Any] = field(default_factory=dict)
    class_names: list[str] | None = None
    #: A field of the rows (``group`` or a kept field): also write ``PRED.groups.csv``.
    aggregate_by: str | None = None
    #: Groups whose chosen class's mean probability is below this are ``unclassified``.
    min_confidence: float = 0.0
    #: Compare labels with predictions by class index although the names differ.
    ignore_class_names: bool = False
    #: The dataset's class names that differ from the model's, each mapped to a model class
    #: (``{"spot": "blob"}``); labels are then compared in the model's numbering.
    class_map: dict[str, str] = field(default_factory=dict)
    #: Average each 1-D row's probabilities with its reverse's (``--rc-average``).
    rc_average: bool = False
    #: Genome input: how rows are cut (``--genome-params``; the tokenizer is the run's).
    genome_params: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if self.top_k < 1:
            raise UserError(f"--top-k {self.top_k}: give at least 1")
        if self.batch < 1:
            raise UserError(f"--batch {self.batch}: the batch size must be at least 1")
        if Path(self.out).suffix.lower() not in (".h5", ".csv"):
            raise UserError(f"--out {self.out}: name the output PRED.h5 or PRED.csv")
        p = self.min_confidence
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise OptionError(
                "min-confidence", p, "is not a probability in [0, 1]", "give e.g. 0.6"
            )
        if p > 0 and not self.aggregate_by:
            raise OptionError(
                "min-confidence",
                p,
                "applies to the per-group table only",
                "add --aggregate-by group (or a kept field)",
            )


def check_aggregate_field(cfg: PredictConfig, ds: Dataset) -> None:
    """``--aggregate-by`` names one of the fields the predictions of ``ds`` carry; a
    dataset takes no lineage options (its rows have theirs)."""
    for key, option in (("group_field", "group-field"), ("keep_fields", "keep-fields")):
        value = cfg.input.get(key)
        if value:
            shown = ",".join(value) if isinstance(value, list) else str(value)
            raise OptionError(
                option,
                shown,
                f"{ds.path} is a dataset: its rows carry the groups and fields it was made with",
                f"leave out --{option}, or give the source file to --data",
            )
    if cfg.aggregate_by:
        _check_field(cfg.aggregate_by, DatasetFields(ds).names(), str(ds.path))


def check_file_fields(cfg: PredictConfig) -> None:
    """File input: ``--aggregate-by`` names the group or a kept field asked for."""
    if not cfg.aggregate_by:
        return
    if is_genome_input(Path(cfg.data), cfg.input.get("format")):
        _check_field(cfg.aggregate_by, ["group", *GENOME_FIELDS], cfg.data)
        return
    group = cfg.input.get("group_field")
    names = (["group", "group_id"] if group else []) + list(cfg.input.get("keep_fields") or [])
    _check_field(cfg.aggregate_by, names, cfg.data)


def _check_field(field: str, names: list[str], data: str) -> None:
    if field in names:
        return
    if names:
        fix = "use one of " + ", ".join(names)
    else:
        fix = "its rows have no group or kept fields (give --group-field/--keep-fields)"
    raise OptionError("aggregate-by", field, f"{data} has no such field", fix)


def check_class_names(cfg: PredictConfig, source: ModelSource, ds: Dataset) -> tuple[int, ...]:
    """A dataset whose classes are named otherwise than the model's is refused: its labels
    would be compared with the predictions by index ("ring" as class 3 of one, 4 of the
    other) and the accuracy would mean nothing. With ``class_map`` (or where the names are
    the same classes in another order) returns the model's index of each dataset class."""
    model = list(source.class_names)
    data = list(ds.class_names)
    if cfg.class_map:
        if cfg.ignore_class_names:
            raise UserError("--class-map and --ignore-class-names: give one of them")
        if not model:
            raise UserError(f"--class-map: the model {source.path} has no class names to map to")
        return label_map(cfg.class_map, data, model, str(ds.path))
    if not model or cfg.ignore_class_names or model == data:
        return ()
    if len(model) != ds.num_classes and not set(model) & set(data):
        return ()  # another task altogether: its labels are not compared (has_labels is off)
    if sorted(model) == sorted(data):
        return tuple(model.index(name) for name in data)  # the same classes, other numbering
    raise UserError(
        f"{ds.path}: its classes ({', '.join(data[:6])}) are not the model's "
        f"({', '.join(model[:6])}); labels would be compared by index. Map them with "
        "--class-map DATA=MODEL,... (e.g. spot=blob), or pass --ignore-class-names to "
        "compare by index anyway"
    )


def label_map(
    class_map: dict[str, str], data: list[str], model: list[str], where: str
) -> tuple[int, ...]:
    """The model's class index of each of ``data``'s classes: its own name where the model
    has it, else what ``class_map`` maps it to."""
    for name, target in class_map.items():
        if name not in data:
            raise OptionError(
                "class-map", f"{name}={target}", f"{where} has no class {name!r}",
                "map the data's classes: " + ", ".join(data[:8]),
            )  # fmt: skip
        if target not in model:
            raise OptionError(
                "class-map", f"{name}={target}", f"the model has no class {target!r}",
                "map to one of " + ", ".join(model[:8]),
            )  # fmt: skip
    out = []
    unmapped = []
    for name in data:
        target = class_map.get(name, name)
        if target in model:
            out.append(model.index(target))
        else:
            unmapped.append(name)
    if unmapped:
        raise OptionError(
            "class-map", ",".join(f"{k}={v}" for k, v in class_map.items()),
            f"leaves the data's {', '.join(unmapped[:6])} without a model class",
            "map every class the model does not have, e.g. " + f"{unmapped[0]}={model[0]}",
        )  # fmt: skip
    return tuple(out)


def parse_class_map(text: str) -> dict[str, str]:
    """``"spot=blob, bar=edge"`` -> ``{"spot": "blob", "bar": "edge"}``."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, eq, target = part.partition("=")
        if not eq or not name.strip() or not target.strip():
            raise OptionError(
                "class-map", text, f"{part.strip()!r} is not DATA=MODEL", "e.g. spot=blob,bar=edge"
            )
        if name.strip() in out:
            raise OptionError("class-map", text, f"{name.strip()!r} is mapped twice", "map it once")
        out[name.strip()] = target.strip()
    return out


def check_split_rows(rows: RowRanges, cfg: PredictConfig, ds: Dataset) -> None:
    if len(rows) == 0:
        raise UserError(
            f"--split {cfg.split}: the run's {cfg.split} split of {ds.path} holds no rows "
            "(a run without a test split has none); give --split val or all"
        )


def is_dataset(path: Path) -> bool:
    """A guiapp dataset index (vs a file for the importers)."""
    if path.suffix.lower() not in (".h5", ".hdf5"):
        return False
    import h5py

    try:
        with h5py.File(path, "r", locking=False) as f:
            fmt = f.attrs.get("format", b"")
    except OSError:
        return False
    return (fmt.decode() if isinstance(fmt, bytes) else str(fmt)) == DATASET_FORMAT


def table_path(out: Path) -> Path:
    """Where the table is written: the output itself, or beside a CSV until it is done."""
    return out if out.suffix.lower() == ".h5" else out.parent / f".{out.name}.h5"


def open_input(
    cfg: PredictConfig, source: ModelSource, sink: EventSink, cancel: CancelToken
) -> Dataset:
    data = Path(cfg.data)
    if not data.exists():
        raise FileError(data, "does not exist", "Give a dataset NAME.h5 or a file to predict")
    if is_dataset(data):
        return Dataset(data)
    if cfg.split != "all":
        raise UserError(
            f"--split {cfg.split}: a file has no splits; use --split all",
            option="--split",
            value=cfg.split,
            problem="a file has no splits",
            fix="use --split all",
        )
    names = cfg.class_names or source.class_names
    if not names:
        raise UserError(
            f"{data}: the model's class names are unknown; give its run folder or --class-names"
        )
    if is_genome_input(data, cfg.input.get("format")):
        genomes = genomes_as_dataset(
            data,
            Path(cfg.out),
            source=source,
            class_names=list(names),
            asked=cfg.genome_params,
            sink=sink,
            cancel=cancel,
        )
        return Dataset(genomes)
    options = {**cfg.input, "format": guess_format(data, cfg.input.get("format"))}
    shape = source.dataset.get("sample_shape") or []
    if len(shape) == 1 and options.get("length") is None:
        options["length"] = int(shape[0])  # pad or cut rows to the model's input length
    if options.get("dtype") is None and source.dataset.get("dtype"):
        options["dtype"] = source.dataset["dtype"]
    path = file_as_dataset(
        data, Path(cfg.out), class_names=list(names), options=options, sink=sink, cancel=cancel
    )
    return Dataset(path)


def load_model(source: ModelSource, strategy: Any) -> Any:
    from ..model.keras_file import load_keras

    with strategy.scope():
        return load_keras(source.path)


def run_predict(
    cfg: PredictConfig, devices: Any, sink: EventSink, cancel: CancelToken
) -> dict[str, Any]:
    """Predict; returns the summary (also the ``finished`` or ``stopped`` event)."""
    cfg.check()
    source = resolve_model(cfg.model, cfg.which)
    out = Path(cfg.out)
    if not cfg.aggregate_by and is_genome_input(Path(cfg.data), cfg.input.get("format")):
        cfg.aggregate_by = "group"  # genomes in, organisms out: the per-genome table
    if is_dataset(Path(cfg.data)):
        with Dataset(cfg.data) as checked:
            check_aggregate_field(cfg, checked)
    else:
        check_file_fields(cfg)
    ds = open_input(cfg, source, sink, cancel)
    fields = DatasetFields(ds)
    model = load_model(source, devices.strategy)
    x_shape = tuple(int(s) for s in model.input_shape[1:])
    if int(np.prod(x_shape)) != int(np.prod(ds.sample_shape)):
        raise UserError(
            f"{ds.path}: samples of shape {ds.sample_shape} do not fit the model's input {x_shape}"
        )
    width = int(model.outputs[0].shape[-1])
    k_classes = 2 if width == 1 else width
    names = cfg.class_names or source.class_names or ds.class_names
    if len(names) != k_classes:
        names = [str(i) for i in range(k_classes)]
    top_k = min(cfg.top_k, k_classes)
    plan = split_plan(ds, source, cfg.split, cfg.batch * devices.replicas)
    rows = plan_rows(plan)
    check_split_rows(rows, cfg, ds)
    mapping = check_class_names(cfg, source, ds) if is_dataset(Path(cfg.data)) else ()
    if mapping == tuple(range(len(mapping))):
        mapping = ()
    if out.suffix.lower() == ".csv" and len(rows) > MAX_CSV_ROWS:
        raise UserError(
            f"--out {out}: {len(rows):,} rows is too many for CSV (at most {MAX_CSV_ROWS:,}); write PRED.h5"
        )
    spec = TableSpec(
        rows=len(rows),
        num_classes=k_classes,
        top_k=top_k,
        class_names=tuple(names),
        has_labels=ds.num_classes == k_classes or bool(mapping),
        with_probs=cfg.probs,
        model_hash=source.hash,
        model_path=str(source.path.resolve()),
        dataset_hash=dataset_hash(ds),
        dataset_path=str(ds.path.resolve()),
        split=cfg.split,
        batch=plan.batch_size,
        fields=fields.spec(),
        label_map=mapping,
        rc_average=cfg.rc_average,
    )
    path = table_path(out)
    resumed = _create_or_resume(path, spec, rows, cfg.overwrite)
    table = TableWriter(path, fields)
    in_dtype = str(model.inputs[0].dtype).removeprefix("<dtype: '").removesuffix("'>")
    sink.emit(
        "started",
        job="predict",
        config=asdict(cfg),
        model=str(source.path),
        data=str(ds.path),
        out=str(out),
        rows=len(rows),
        devices=devices.description,
        replicas=devices.replicas,
        class_names=list(names),
        resumed_from=table.committed if resumed else None,
    )
    meter = RateMeter(len(rows))
    meter.update(table.committed)
    resumed_rows = table.committed
    started = time.monotonic()

    def progress(done: int) -> None:
        sink.emit("progress", job="predict", phase="predict", **meter.update(done))

    pipe = pipeline_for(ds, plan, dtype=in_dtype)
    if cfg.rc_average and len(ds.sample_shape) != 1:
        raise OptionError(
            "rc-average", True, f"needs 1-D k-mer rows; {ds.path} holds {ds.sample_shape}", ""
        )
    heads = make_heads(model, devices.strategy, top_k, cfg.rc_average)
    predict_t0 = time.monotonic()
    try:
        complete = predict_into(
            table,
            pipe,
            heads,
            x_shape=x_shape,
            strategy=devices.strategy,
            cancel=cancel,
            on_commit=progress,
            commit_rows=cfg.commit_rows,
            label_map=np.asarray(mapping, np.int32) if mapping else None,
        )
    finally:
        pipe.close()
    if not complete:
        sink.emit("stopped", job="predict", done=table.committed, total=len(rows), out=str(out))
        return {"status": "stopped", "done": table.committed, "total": len(rows)}
    summary = summarize(path)
    predict_s = time.monotonic() - predict_t0
    if predict_s > 0:  # rows (reads) per second of the prediction itself
        summary["rows_per_s"] = round((len(rows) - int(resumed_rows)) / predict_s, 1)
    if cfg.aggregate_by:
        groups = aggregate([path], cfg.aggregate_by)
        groups.write_csv(groups_path(out), cfg.min_confidence)
        summary["groups"] = {"out": str(groups_path(out)), **groups.summary(cfg.min_confidence)}
    if out.suffix.lower() == ".csv":
        write_csv(path, out)
        os.unlink(path)
    summary.update(
        status="finished",
        out=str(out),
        data=str(ds.path),
        elapsed_s=round(time.monotonic() - started, 2),
    )
    sink.emit("finished", job="predict", **summary)
    return summary


def _create_or_resume(path: Path, spec: TableSpec, rows: RowRanges, overwrite: bool) -> bool:
    """True when an earlier job's table is continued."""
    if path.exists():
        identity = read_identity(path)
        if identity == spec.identity() and not overwrite:
            return True
        if not overwrite:
            raise FileError(
                path,
                "holds predictions of another model, dataset or setting",
                "Pass --overwrite to replace it, or choose another --out",
                option="--out",
            )
    create_table(path, spec, rows)
    return False
