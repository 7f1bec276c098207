"""Checks before a run starts, and the resolved config it records.

Everything here is pure Python, numpy and h5py: ``guiapp train`` runs it before it imports
TensorFlow, so a mistake costs the user a fraction of a second and one line.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import errors, store
from ..errors import UserError
from ..genomes.source import dataset_tokenizer
from ..provenance import versions
from ..store.lock import writer_active
from .config import TrainConfig
from .devices import Devices
from .runfolder import RunFolder


def check_model_against_data(spec: dict[str, Any], ds: store.Dataset) -> None:
    """The model must fit the dataset: input shape, dtype, class count (the labels against
    the output layer); and the dataset must be ready to train on. Raise one clear error."""
    from ..model import validate

    problems = validate(
        spec, input_shape=ds.sample_shape, num_classes=ds.num_classes, input_dtype=ds.dtype.name
    )
    if problems:
        text = "; ".join(str(p) for p in problems)
        raise UserError(f"the model does not fit {ds.path}: {text}", option="--model")
    check_data_ready(ds)


def check_data_ready(ds: store.Dataset) -> None:
    """Rows to train on, no job writing them, every shard sealed, finite statistics; an
    error here concerns the dataset option, ``--data``."""
    try:
        _check_data_ready(ds)
    except UserError as exc:
        raise exc.concerning("--data", str(ds.path)) from None


def _check_data_ready(ds: store.Dataset) -> None:
    if len(ds) == 0:
        raise errors.no_rows(ds.path)
    if writer_active(ds.path):
        raise errors.being_written(ds.path)
    if not ds.complete:
        sealed = sum(1 for s in ds.shards if s.content_hash)
        raise errors.unfinished(ds.path, sealed, len(ds.shards))
    count, first = 0, ""
    for s in ds.shards:
        st = s.stats
        bad = int(st.nonfinite)
        recorded = not math.isnan(st.value_sum)  # NaN: value statistics were not recorded
        if recorded and not (math.isfinite(st.value_sum) and math.isfinite(st.value_sumsq)):
            bad = max(bad, 1)
        if bad and not first:
            first = f"shard {s.path.name}"
        count += bad
    header_bad = sum(1 for v in _floats(ds.statistics) if not math.isfinite(v))
    if header_bad and not first:
        first = "the header's statistics"
    if count + header_bad:
        raise errors.nonfinite_values(ds.path, count + header_bad, first)


def _floats(obj: Any) -> Iterator[float]:
    if isinstance(obj, float):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _floats(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _floats(v)


def check_augment_fits(cfg: TrainConfig, ds: store.Dataset) -> None:
    from ..augment.online import AugmentSpec

    try:
        AugmentSpec.from_json(cfg.augment).check_shape(ds.sample_shape)
    except ValueError as exc:
        raise errors.OptionError("augment", json.dumps(cfg.augment), f"{exc}") from None


def check_run_folder(cfg: TrainConfig, *, resume: bool, restart: bool = False) -> None:
    """``--out`` is a folder that can be written, and holds a run exactly when resuming."""
    errors.check_writable_output(cfg.out, folder=True)
    run = RunFolder(cfg.out)
    if resume and restart:
        raise UserError("--resume and --restart: give one of them (continue, or start again)")
    if restart:
        if run.path.is_dir() and any(run.path.iterdir()) and not _is_run(run):
            raise errors.not_a_run_folder(run.path)
        return
    if resume:
        if not run.config.exists() and _sub_runs(run):
            return  # folds or fractions: each is resumed in its own folder
        if not run.config.exists() and (run.path / "spec.json").is_file():
            return  # killed before its config.json: nothing was trained, it starts again
        if not run.config.exists():
            raise errors.nothing_to_resume(run.path)
        recorded = run.read_json("config.json")
        if recorded.get("identity") != cfg.identity():
            raise errors.run_settings_differ(run.path, cfg.differences(recorded.get("config", {})))
        if run.checkpoint.exists():
            from .checkpoint import verify_checkpoint

            verify_checkpoint(run.checkpoint, run.path)
    elif (run.config.exists() or _sub_runs(run)) and (not cfg.cluster or cfg.worker_index == 0):
        raise errors.run_exists(run.path)  # (other workers of a cluster find the chief's)
    else:
        check_not_foreign(run.path)


#: What a folder guiapp made holds (a run, an experiment, or a spec the GUI wrote first).
MARKERS = frozenset({"config.json", "spec.json", "events.jsonl", "checkpoints"})


def check_not_foreign(path: str | os.PathLike[str]) -> None:
    """A folder holding files that guiapp did not write is never a run's ``--out``: the
    run would overwrite the user's ``report.md`` or ``history.csv``."""
    p = Path(path)
    if not p.is_dir():
        return
    names = {c.name for c in p.iterdir()}
    if names and not names & MARKERS and not _sub_runs(RunFolder(p)):
        raise errors.not_a_run_folder(p, restart=False)


def _is_run(run: RunFolder) -> bool:
    return run.config.exists() or (run.path / "checkpoints").is_dir() or bool(_sub_runs(run))


def _sub_runs(run: RunFolder) -> list[Path]:
    if not run.path.is_dir():
        return []
    return [
        p
        for p in run.path.iterdir()
        if p.is_dir()
        and p.name.startswith(("fold-", "fraction-", "grid-", "random-"))
        and (p / "config.json").exists()
    ]


def clear_run_folder(out: str | os.PathLike[str]) -> None:
    """``--restart``: remove the run in ``out`` (checked by :func:`check_run_folder`)."""
    path = Path(out)
    if path.is_dir():
        shutil.rmtree(path)


def resolved_config(
    cfg: TrainConfig, ds: store.Dataset, dev: Devices, steps: int, global_batch: int
) -> dict[str, Any]:
    return {
        "identity": cfg.identity(),
        "config": cfg.to_json(),
        "dataset": {
            "path": str(ds.path),
            "uuid": ds.uuid,
            "rows": len(ds),
            "sample_shape": list(ds.sample_shape),
            "dtype": ds.dtype.name,
            "class_names": ds.class_names,
            "shard_hashes": [s.content_hash for s in ds.shards],
            # A genomes dataset's tokenizer: predict reads FASTA/FASTQ with exactly it.
            "tokenizer": dataset_tokenizer(ds.provenance, ds.sample_shape),
        },
        "split": cfg.describe_split(ds),
        "devices": dev.description,
        "replicas": dev.replicas,
        "global_batch": global_batch,
        "steps_per_epoch": steps,
        "versions": versions(tensorflow=True),
    }
