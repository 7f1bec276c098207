"""One line of text per training event: what ``guiapp train`` prints and the GUI's run log.

Both the CLI (on stderr, without ``--events -``) and :class:`~.history.RunHistory` (the
Training page's log) call :func:`describe_event`, so they say the same thing.
"""

from __future__ import annotations

import math
from typing import Any

from .experiment_spec import SINGLE_TRIAL


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
    """A run's position as every message says it: the epoch 1-based (as "epoch 2/3" is),
    the steps done in it (``step 0``: the epoch has not started)."""
    epoch = e.get("epoch")
    shown = epoch + 1 if isinstance(epoch, int) and not isinstance(epoch, bool) else "?"
    return f"epoch {shown} step {e.get('step', '?')}"


def _text(kind: Any, e: dict[str, Any], verbose: bool) -> str | None:
    if kind == "started":
        resumed = e.get("resumed_from")
        where = f" (resumed at {_position(resumed)})" if resumed else ""
        return (
            f"training{where} on {e.get('devices', '')}: {e.get('epochs', '?')} epoch(s) of "
            f"{e.get('steps_per_epoch', '?')} steps, global batch {e.get('global_batch', '?')}, "
            f"{int(_n(e.get('train_rows', 0)) or 0):,} train rows, "
            f"{int(_n(e.get('val_rows', 0)) or 0):,} validation rows"
        )
    if kind == "batch":
        if not verbose:
            return None
        return (
            f"  epoch {int(_n(e.get('epoch'))) + 1} step {e.get('step')}/{e.get('steps')}: loss "
            f"{_n(e.get('loss')):.4f} acc {_n(e.get('accuracy')):.3f}, "
            f"{_n(e.get('rows_per_s')):,.0f} rows/s, input wait {_n(e.get('input_wait')):.0%}"
            f"{_wait_detail(e)}"
        )
    if kind == "epoch":
        val = (
            f", val loss {_n(e.get('val_loss')):.4f} val acc {_n(e.get('val_accuracy')):.4f}"
            if e.get("val_loss") is not None
            else ""
        )
        return (
            f"epoch {int(_n(e.get('epoch'))) + 1}: loss {_n(e.get('loss')):.4f} acc "
            f"{_n(e.get('accuracy')):.4f}{val} ({_n(e.get('duration_s')):.1f} s)"
        )
    if kind == "checkpoint":
        return f"checkpoint at {_position(e)}" if verbose else None
    if kind == "evaluation":
        return (
            f"evaluation on {e.get('split', 'val')}: accuracy {_n(e.get('accuracy')):.4f}, "
            f"macro F1 {_n(e.get('macro_f1')):.4f}"
        )
    if kind == "early_stopping":
        best = e.get("best_epoch")
        how = "stopped early" if e.get("stopped") else "ran every epoch"
        return (
            f"early stopping (patience {e.get('patience')}): {how}; keeping the best model, "
            f"epoch {best + 1 if isinstance(best, int) else '?'}"
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


def _wait_detail(e: dict[str, Any]) -> str:
    """`` (fine; input 1.2M rows/s, model 40,000 rows/s)`` when the event carries the rates."""
    from .meters import wait_band

    wait, supply, consume = (
        e.get(k) for k in ("input_wait", "supply_rows_per_s", "consume_rows_per_s")
    )
    if not isinstance(wait, (int, float)) or supply is None or consume is None:
        return ""
    return f" ({wait_band(wait)}; input {_n(supply):,.0f} rows/s, model {_n(consume):,.0f} rows/s)"
