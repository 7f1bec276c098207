"""One line of text per training event: what ``guiapp train`` prints and the GUI's run log.

Both the CLI (on stderr, without ``--events -``) and :class:`~.history.RunHistory` (the
Training page's log) call :func:`describe_event`, so they say the same thing.

Epochs are 1-based in every event, file and message: the ``epoch`` of ``batch``,
``epoch``, ``checkpoint`` and ``stopped`` events, ``resumed_from`` and ``best_epoch`` count
from 1, and ``started`` says so (``epochs_from: 1``). Events written before that (no
``epochs_from``) counted from 0; :class:`EpochConvention` turns them into 1-based ones as
they are read, so old run folders show the same numbers as new ones.
"""

from __future__ import annotations

import math
from typing import Any

from .experiment_spec import SINGLE_TRIAL
from .metrics import extra_metrics, names_in, short

#: Events whose ``epoch`` is a run's epoch number.
EPOCH_EVENTS = ("batch", "epoch", "checkpoint", "stopped", "failed")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class EpochConvention:
    """Reads a run's events into the 1-based convention: each ``started`` says whether the
    events after it count epochs from 1 (``epochs_from: 1``) or, written before that, from
    0; :meth:`__call__` returns an event with 1-based epochs (a copy when it changed)."""

    def __init__(self) -> None:
        self.shift = 0

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        kind = event.get("event")
        if kind == "started":
            self.shift = 0 if event.get("epochs_from") == 1 else 1
            resumed = event.get("resumed_from")
            if self.shift and isinstance(resumed, dict) and _int(resumed.get("epoch")):
                return {**event, "resumed_from": {**resumed, "epoch": resumed["epoch"] + 1}}
            return event
        if not self.shift:
            return event
        if kind in EPOCH_EVENTS and _int(event.get("epoch")):
            return {**event, "epoch": event["epoch"] + 1}
        if kind == "early_stopping" and _int(event.get("best_epoch")):
            return {**event, "best_epoch": event["best_epoch"] + 1}
        return event


def _n(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _params(params: Any) -> str:
    if not isinstance(params, dict) or not params:
        return ""
    return " (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def describe_event(e: dict[str, Any], *, verbose: bool = False) -> str | None:
    """The line for event ``e``; None for events without one (batches unless ``verbose``)."""
    kind = e.get("event")
    trial = e.get("trial")
    prefix = f"[{trial}] " if trial and trial != SINGLE_TRIAL and kind != "trial" else ""
    text = _text(kind, e, verbose)
    return None if text is None else prefix + text


def _position(e: dict[str, Any]) -> str:
    """A run's position as every message says it: the epoch (1-based, as "epoch 2/3" is),
    the steps done in it (``step 0``: the epoch has not started)."""
    epoch = e.get("epoch")
    shown = epoch if _int(epoch) else "?"
    return f"epoch {shown} step {e.get('step', '?')}"


def _metrics(e: dict[str, Any], prefix: str = "") -> str:
    """`` top3 0.912`` for each metric besides accuracy that the event carries."""
    names = extra_metrics(
        names_in({k[len(prefix) :]: v for k, v in e.items() if k.startswith(prefix)})
    )
    return "".join(f" {prefix and 'val '}{short(m)} {_n(e.get(prefix + m)):.4f}" for m in names)


def _text(kind: Any, e: dict[str, Any], verbose: bool) -> str | None:
    if kind == "started":
        resumed = e.get("resumed_from")
        where = f" (resumed at {_position(resumed)})" if resumed else ""
        return (
            f"training{where} on {e.get('devices', '')}: {e.get('epochs', '?')} epoch(s) of "
            f"{e.get('steps_per_epoch', '?')} steps, global batch {e.get('global_batch', '?')}, "
            f"{int(_n(e.get('train_rows', 0)) or 0):,} train rows, "
            f"{int(_n(e.get('val_rows', 0)) or 0):,} validation rows{_cache(e)}"
        )
    if kind == "batch":
        if not verbose:
            return None
        return (
            f"  epoch {_epoch(e)} step {e.get('step')}/{e.get('steps')}: loss "
            f"{_n(e.get('loss')):.4f} acc {_n(e.get('accuracy')):.3f}{_metrics(e)}, "
            f"{_n(e.get('rows_per_s')):,.0f} rows/s, input wait {_n(e.get('input_wait')):.0%}"
            f"{_wait_detail(e)}"
        )
    if kind == "epoch":
        val = (
            f", val loss {_n(e.get('val_loss')):.4f} val acc {_n(e.get('val_accuracy')):.4f}"
            f"{_metrics(e, 'val_')}"
            if e.get("val_loss") is not None
            else ""
        )
        startup = _n(e.get("startup_s"))
        wait = (
            f", input wait {_n(e.get('input_wait')):.0%}"
            + (f" after a {startup:.1f} s start-up" if startup >= 0.05 else "")
            if e.get("input_wait") is not None
            else ""
        )
        return (
            f"epoch {_epoch(e)}: loss {_n(e.get('loss')):.4f} acc "
            f"{_n(e.get('accuracy')):.4f}{_metrics(e)}{val} ({_n(e.get('duration_s')):.1f} s"
            f"{wait})"
        )
    if kind == "checkpoint":
        return f"checkpoint at {_position(e)}" if verbose else None
    if kind == "evaluation":
        return (
            f"evaluation on {e.get('split', 'val')}: accuracy {_n(e.get('accuracy')):.4f}"
            f"{_metrics(e)}, macro F1 {_n(e.get('macro_f1')):.4f}"
        )
    if kind == "early_stopping":
        best = e.get("best_epoch")
        how = "stopped early" if e.get("stopped") else "ran every epoch"
        return (
            f"early stopping (patience {e.get('patience')}): {how}; keeping the best model, "
            f"epoch {best if _int(best) else '?'}"
        )
    if kind == "finished":
        best = e.get("best_val_accuracy")
        return "finished" + (
            f": best validation accuracy {_n(best):.4f}" if best is not None else ""
        )
    if kind in ("stopped", "failed"):
        detail = e.get("reason") or e.get("message") or ""
        where = f" at {_position(e)}" if "step" in e else ""
        return f"{kind}{where}{': ' + str(detail) if detail else ''}"
    if kind == "log":
        return str(e.get("message", ""))
    if kind == "experiment":
        trials = e.get("trials") or []
        varied = ", ".join(e.get("varied") or []) or "nothing"
        return f"experiment of {len(trials)} trials in {e.get('out', '')} (varying {varied})"
    if kind == "trial":
        what = "already finished" if e.get("status") == "finished" else "starts"
        return f"trial {e.get('trial')}{_params(e.get('params'))} {what}"
    if kind == "experiment_finished":
        s = e.get("summary") or {}
        text = f"experiment finished: {s.get('finished')} of {s.get('trials')} trials"
        if s.get("best_trial"):
            text += f", best {s['best_trial']} ({_n(s.get('best_val_accuracy')):.4f})"
        if s.get("mean_val_accuracy") is not None and s.get("folds"):
            text += (
                f", mean {_n(s['mean_val_accuracy']):.4f} ± {_n(s.get('std_val_accuracy')):.4f}"
                f" over {s['folds']} folds"
            )
        return text
    return None


def _epoch(e: dict[str, Any]) -> Any:
    epoch = e.get("epoch")
    return epoch if _int(epoch) else "?"


def _cache(e: dict[str, Any]) -> str:
    """``, rows read once into memory (120 MB fit in 0.5 of available memory)``."""
    c = e.get("cache")
    if not isinstance(c, dict) or c.get("mode") not in ("memory", "off"):
        return ""
    if c["mode"] == "memory":
        return f", rows read once into memory ({c.get('reason', '')})"
    return f", rows read from the files ({c.get('reason', '')})"


def _wait_detail(e: dict[str, Any]) -> str:
    """`` (fine; input 1.2M rows/s, model 40,000 rows/s)`` when the event carries the rates."""
    from .meters import wait_band

    wait, supply, consume = (
        e.get(k) for k in ("input_wait", "supply_rows_per_s", "consume_rows_per_s")
    )
    if not isinstance(wait, (int, float)) or supply is None or consume is None:
        return ""
    return f" ({wait_band(wait)}; input {_n(supply):,.0f} rows/s, model {_n(consume):,.0f} rows/s)"
