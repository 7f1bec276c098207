"""An experiment's summary, read from its trials' run folders: ``experiment.json`` and ``.md``.

``experiment.json``: ``{"trials": [{"id", "params", "run", "status", "train_rows",
"best": {"epoch", "val_accuracy", "val_loss"}, "final": {"epoch", "loss", "accuracy",
"val_loss", "val_accuracy", "macro_f1"}}], "summary": {"metric", "trials", "finished",
"best_trial", "mean_val_accuracy", "std_val_accuracy", "folds", "groups", "curve"}}``.
A group is the trials that differ only in their fold (mean and std over folds); the curve
is one point per fraction (training rows against validation accuracy, spread over folds).
Once every fold of a group has finished, the group gets ``oof``: the pooled out-of-fold
evaluation, built from every fold's ``predictions.h5`` (the folds' validation rows are
disjoint, so pooled they hold each row once): the confusion matrix and class report per
row and, when the rows have groups, per group (majority true class vs mean-probability
class); ``summary.oof`` is the best group's (``oof_groups.csv`` its per-group table).
Everything comes from the run folders' files, so a resumed experiment summarises exactly
like an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from .evaluate import class_report, group_report, report_markdown
from .experiment_spec import ExperimentSpec, Trial
from .runfolder import RunFolder, read_json_object

SUMMARY_JSON = "experiment.json"
SUMMARY_MD = "experiment.md"
OOF_GROUPS_CSV = "oof_groups.csv"
METRIC = "val_accuracy"


def _float(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def trial_status(run: RunFolder) -> str:
    """``finished`` (a finished event), ``started`` (a config.json), else ``pending``."""
    try:
        with open(run.events, encoding="utf-8", errors="replace") as fh:  # a log: a bad
            if any('"event": "finished"' in line for line in fh):  # byte is not a bad run
                return "finished"
    except OSError:
        pass
    return "started" if run.config.exists() else "pending"


def trial_result(trial: Trial) -> dict[str, Any]:
    run = RunFolder(trial.run_dir)
    rows = run.read_history()
    cfg = read_json_object(run.config)
    report = read_json_object(run.path / "report.json")
    best_i, best = None, None
    for i, row in enumerate(rows):
        v = _float(row.get(METRIC))
        if v is not None and (best is None or v > best):
            best_i, best = i, v
    last = rows[-1] if rows else {}
    final = {
        "epoch": int(last["epoch"]) if last.get("epoch") not in (None, "") else None,
        **{k: _float(last.get(k)) for k in ("loss", "accuracy", "val_loss", "val_accuracy")},
    }
    if report:  # the final model's evaluation (the best epoch's weights after early stopping)
        final["val_accuracy"] = _float(report.get("accuracy"))
        final["macro_f1"] = _float(report.get("macro_f1"))
    steps, batch = cfg.get("steps_per_epoch"), cfg.get("global_batch")
    return {
        "id": trial.id,
        "params": trial.params,
        "run": trial.run_dir.name,
        "status": trial_status(run),
        "train_rows": int(steps) * int(batch) if steps and batch else None,
        "epochs": len(rows),
        "best": {
            "epoch": int(rows[best_i]["epoch"]) if best_i is not None else None,
            "val_accuracy": best,
            "val_loss": _float(rows[best_i].get("val_loss")) if best_i is not None else None,
        },
        "final": final,
    }


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0


def group_over_folds(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trials that differ only in their fold, with the mean and std of their final
    validation accuracy; ``results`` rows need ``id``, ``params``, ``status``, ``final`` and
    ``train_rows`` (experiment.json's trial rows; the GUI builds the same from events)."""
    groups: dict[str, dict[str, Any]] = {}
    for r in results:
        key_params = {k: v for k, v in r["params"].items() if k != "fold"}
        key = json.dumps(key_params, sort_keys=True, default=str)
        g = groups.setdefault(key, {"params": key_params, "trials": [], "values": [], "rows": []})
        g["trials"].append(r["id"])
        value = r["final"].get("val_accuracy") if r["status"] == "finished" else None
        if value is not None:
            g["values"].append(value)
        if r["train_rows"]:
            g["rows"].append(r["train_rows"])
    out = []
    for g in groups.values():
        mean, std = _mean_std(g.pop("values"))
        rows = g.pop("rows")
        g.update(
            mean_val_accuracy=mean,
            std_val_accuracy=std,
            train_rows=round(statistics.fmean(rows)) if rows else None,
        )
        out.append(g)
    return out


def pooled_out_of_fold(runs: list[Path]) -> tuple[dict[str, Any], Any] | None:
    """The pooled evaluation of the folds' ``predictions.h5`` (None while one is missing)
    and its ``GroupTable`` (None without groups): ``rows``, the class report of every fold's
    rows together, and ``groups``, per group with each group's rows of every fold pooled."""
    from ..predict.groups import aggregate
    from ..predict.output import confusion_from_table
    from ..predict.table import PredictionTable

    paths = [RunFolder(r).predictions for r in runs]
    if not paths or not all(p.exists() for p in paths):
        return None
    tables = [PredictionTable(p) for p in paths]
    if not all(t.complete and t.has_labels for t in tables):
        return None
    cm = confusion_from_table(tables[0])
    for t in tables[1:]:
        cm = cm + confusion_from_table(t)
    rows = class_report(cm, tables[0].class_names)
    rows.pop("class_names")
    out: dict[str, Any] = {"folds": len(paths), "rows": rows, "groups": None}
    table = None
    if all("group" in t.fields for t in tables):
        table = aggregate(paths, "group")
        out["groups"] = group_report(table)
    return out, table


def _with_oof(
    spec: ExperimentSpec, trials: list[Trial], groups: list[dict[str, Any]]
) -> dict[int, Any]:
    """Each group whose folds have all finished gets its pooled out-of-fold evaluation;
    returns the per-group tables by group index."""
    run_of = {t.id: t.run_dir for t in trials}
    tables: dict[int, Any] = {}
    for i, g in enumerate(groups):
        g["oof"] = None
        if len(spec.folds) > 1 and len(g["trials"]) == len(spec.folds):
            got = pooled_out_of_fold([run_of[t] for t in g["trials"]])
            if got is not None:
                g["oof"], tables[i] = got
    return tables


def summarize(spec: ExperimentSpec, oof_groups_csv: Path | None = None) -> dict[str, Any]:
    """The summary; with ``oof_groups_csv``, the pooled per-group table written there."""
    trials = spec.trials()
    results = [trial_result(t) for t in trials]
    for r, t in zip(results, trials, strict=True):
        r["run"] = "." if t.run_dir == spec.out else t.run_dir.name
    group_list = group_over_folds(results)
    oof_tables = _with_oof(spec, trials, group_list)
    done = [
        r for r in results if r["status"] == "finished" and r["final"]["val_accuracy"] is not None
    ]
    best = max(done, key=lambda r: r["final"]["val_accuracy"], default=None)
    best_group = None
    if best is not None:
        best_group = next(g for g in group_list if best["id"] in g["trials"])
    summary: dict[str, Any] = {
        "metric": METRIC,
        "trials": len(results),
        "finished": sum(r["status"] == "finished" for r in results),
        "best_trial": best["id"] if best else None,
        "best_val_accuracy": best["final"]["val_accuracy"] if best else None,
        "best_params": best["params"] if best else None,
        "folds": len(spec.folds),
        "mean_val_accuracy": best_group["mean_val_accuracy"] if best_group else None,
        "std_val_accuracy": best_group["std_val_accuracy"] if best_group else None,
        "groups": group_list,
    }
    chosen = best_group or (group_list[0] if len(group_list) == 1 else None)
    summary["oof"] = chosen["oof"] if chosen else None
    at = next((i for i, g in enumerate(group_list) if g is chosen), -1)
    table = oof_tables.get(at)
    if oof_groups_csv is not None and table is not None:
        table.write_csv(oof_groups_csv)
    if spec.fractions:
        summary["curve"] = [
            {
                "fraction": g["params"].get("fraction"),
                "train_rows": g["train_rows"],
                "mean_val_accuracy": g["mean_val_accuracy"],
                "std_val_accuracy": g["std_val_accuracy"],
                "params": {k: v for k, v in g["params"].items() if k != "fraction"},
            }
            for g in group_list
        ]
    return {"format": "guiapp-experiment-summary", "trials": results, "summary": summary}


def write_summary(spec: ExperimentSpec) -> dict[str, Any]:
    """Write ``experiment.json`` and ``experiment.md``; returns the summary."""
    out = spec.out
    data = summarize(spec, out / OOF_GROUPS_CSV)
    RunFolder(out).write_json(SUMMARY_JSON, data)
    atomic_write_text(out / SUMMARY_MD, markdown(spec, data))
    return data


def _fmt(value: Any, digits: int = 4) -> str:
    return (
        "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    )


def _param(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def markdown(spec: ExperimentSpec, data: dict[str, Any]) -> str:
    s, trials = data["summary"], data["trials"]
    names = spec.varied()
    lines = [f"# Experiment {spec.out.name}", ""]
    lines.append(
        f"{s['finished']} of {s['trials']} trial(s) finished; metric: validation accuracy."
    )
    lines += [
        "",
        "| trial | "
        + " | ".join(
            [
                *names,
                "status",
                "epochs",
                "rows",
                "best (epoch)",
                "final val accuracy",
                "final val loss",
            ]
        )
        + " |",
    ]
    lines.append("|---" * (len(names) + 7) + "|")
    for r in trials:
        b, f = r["best"], r["final"]
        cells = [
            r["id"],
            *(_param(r["params"].get(n)) for n in names),
            r["status"],
            str(r["epochs"]),
            _fmt(r["train_rows"]),
            f"{_fmt(b['val_accuracy'])} ({_fmt(b['epoch'])})",
            _fmt(f["val_accuracy"]),
            _fmt(f["val_loss"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if spec.folds:
        lines += ["", f"## Mean ± std over {len(spec.folds)} folds", ""]
        for g in s["groups"]:
            label = ", ".join(f"{k}={v}" for k, v in g["params"].items()) or "all folds"
            lines.append(
                f"- {label}: {_fmt(g['mean_val_accuracy'])} ± {_fmt(g['std_val_accuracy'])}"
            )
    if s["best_trial"]:
        params = ", ".join(f"{k}={v}" for k, v in (s["best_params"] or {}).items())
        lines += [
            "",
            f"Best trial: **{s['best_trial']}** ({params or 'the only one'}), "
            f"validation accuracy {_fmt(s['best_val_accuracy'])}.",
        ]
    if s.get("curve"):
        lines += [
            "",
            "## Data-scaling curve",
            "",
            "| fraction | training rows | validation accuracy |",
            "|---|---|---|",
        ]
        for p in s["curve"]:
            spread = f" ± {_fmt(p['std_val_accuracy'])}" if spec.folds else ""
            lines.append(
                f"| {p['fraction']} | {_fmt(p['train_rows'])} | "
                f"{_fmt(p['mean_val_accuracy'])}{spread} |"
            )
    if s["mean_val_accuracy"] is not None:
        lines += ["", f"Mean {s['mean_val_accuracy']:.4f} ± {s['std_val_accuracy']:.4f}."]
    if s.get("oof"):
        lines += _oof_markdown(s["oof"])
    return "\n".join(lines) + "\n"


def _oof_markdown(oof: dict[str, Any]) -> list[str]:
    r = oof["rows"]
    lines = [
        "",
        f"## Pooled out-of-fold evaluation ({oof['folds']} folds)",
        "",
        "Every fold's validation predictions together (each row once, predicted by the "
        "model that did not train on it).",
        "",
        f"Per row: accuracy {r['accuracy']:.4f}, macro F1 {r['macro_f1']:.4f}, {r['rows']:,} rows.",
        "",
        *report_markdown(r, "rows"),
    ]
    g = oof["groups"]
    if g is not None:
        lines += [
            "",
            f"Per group (majority true class vs mean-probability class, `{OOF_GROUPS_CSV}`): "
            f"accuracy {g['accuracy']:.4f}, macro F1 {g['macro_f1']:.4f}, "
            f"{g['groups']:,} groups.",
            "",
            *report_markdown(g, "groups"),
        ]
    return lines
