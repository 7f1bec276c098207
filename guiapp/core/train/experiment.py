"""``run_training``: a run, k folds, or a data-scaling curve, each fold/fraction a run folder."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..events import CancelToken, EventSink
from .config import TrainConfig
from .devices import Devices
from .runfolder import RunFolder
from .runner import TrainingJob


def run_training(
    cfg: TrainConfig,
    devices: Devices,
    sink: EventSink,
    cancel: CancelToken,
    *,
    resume: bool = False,
    all_folds: bool = False,
    fractions: list[float] | None = None,
) -> dict[str, Any]:
    problems = cfg.check()
    if problems:
        raise UserError("; ".join(problems))
    if fractions:
        return _sweep(cfg, devices, sink, cancel, resume, "fraction", fractions)
    if cfg.folds and all_folds:
        return _sweep(cfg, devices, sink, cancel, resume, "fold", list(range(cfg.folds)))
    return _one(cfg, devices, sink, cancel, resume)


def _one(
    cfg: TrainConfig, devices: Devices, sink: EventSink, cancel: CancelToken, resume: bool
) -> dict[str, Any]:
    job = TrainingJob(cfg, devices, sink, cancel, resume=resume)
    return job.run_job()


def _sweep(
    cfg: TrainConfig,
    devices: Devices,
    sink: EventSink,
    cancel: CancelToken,
    resume: bool,
    what: str,
    values: list[Any],
) -> dict[str, Any]:
    out = Path(cfg.out)
    results = []
    for v in values:
        sub = dataclasses.replace(
            cfg,
            out=str(out / f"{what}-{v}"),
            **({"fold": v} if what == "fold" else {"fraction": float(v)}),
        )
        run = RunFolder(sub.out)
        if resume and (run.path / "report.json").exists():
            res: dict[str, Any] = {"status": "finished", **_finished(run)}
        else:
            res = _one(sub, devices, sink, cancel, resume and run.config.exists())
        res[what] = v
        results.append(res)
        if res["status"] == "stopped":
            return {"status": "stopped", what: v}
    accs: list[float] = [
        float(r["val_accuracy"]) for r in results if r.get("val_accuracy") is not None
    ]
    rows: list[dict[str, Any]] = [
        {what: r[what], "val_accuracy": r.get("val_accuracy"), "val_loss": r.get("val_loss")}
        for r in results
    ]
    summary: dict[str, Any] = {
        "status": "finished",
        what + "s": values,
        "results": rows,
        "mean_val_accuracy": statistics.fmean(accs) if accs else None,
        "std_val_accuracy": statistics.pstdev(accs) if len(accs) > 1 else 0.0,
    }
    if devices.is_chief:
        RunFolder(out).write_json(f"{what}s.json", summary)
        lines = [f"| {what} | validation accuracy | validation loss |", "|---|---|---|"]
        for r in rows:
            lines.append(
                f"| {r[what]} | {r['val_accuracy']:.4f} | {r['val_loss']:.4f} |"
                if r["val_accuracy"] is not None
                else f"| {r[what]} | - | - |"
            )
        if accs:
            lines.append(
                f"\nMean {summary['mean_val_accuracy']:.4f} ± {summary['std_val_accuracy']:.4f} over {len(accs)} {what}s."
            )
        (out / f"{what}s.md").write_text("\n".join(lines) + "\n")
    sink.emit(f"{what}s_summary", **{k: v for k, v in summary.items() if k != "status"})
    return summary


def _finished(run: RunFolder) -> dict[str, Any]:
    rep = run.read_json("report.json")
    hist = run.read_history()
    last = hist[-1] if hist else {}
    return {
        "val_accuracy": rep.get("accuracy"),
        "val_loss": float(last["val_loss"]) if last.get("val_loss") else None,
    }
