"""Events are JSON lines whatever their numbers: NaN/Inf become null (issue 29)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from guiapp.core.events import EventSink


def test_nan_and_inf_in_an_event_become_null(tmp_path: Path) -> None:
    stream = io.StringIO()
    sink = EventSink(stream, tmp_path / "events.jsonl")
    sink.emit(
        "epoch", loss=float("nan"), acc=np.float32("inf"), vals=[1.5, float("-inf")],
        arr=np.array([np.nan, 2.0]), nested={"a": {"b": float("nan")}},
    )  # fmt: skip
    for text in (stream.getvalue(), (tmp_path / "events.jsonl").read_text()):
        e = json.loads(text)
        assert e["loss"] is None and e["acc"] is None and e["vals"] == [1.5, None]
        assert e["arr"] == [None, 2.0] and e["nested"] == {"a": {"b": None}}


def test_a_failed_event_carries_the_errors_fields_once(tmp_path: Path) -> None:
    """A job's ``failed`` event, emitted while it handles a UserError, gets the error's
    fields; the CLI's own ``failed`` (report_failure) is then not written a second time."""
    from guiapp.core.errors import OptionError
    from guiapp.core.events import Failure, report_failure

    stream = io.StringIO()
    sink = EventSink(stream)
    error = OptionError("on-error", "abort", "row 4 is bad", "pass --on-error skip")
    try:
        raise error
    except OptionError as exc:
        sink.emit("failed", job="import", message=str(exc))
        report_failure(exc, stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    e = json.loads(lines[0])
    assert e["message"] == "--on-error abort: row 4 is bad; pass --on-error skip"
    assert (e["option"], e["value"], e["problem"], e["fix"]) == (
        "--on-error", "abort", "row 4 is bad", "pass --on-error skip",
    )  # fmt: skip
    failure = Failure.of_event(e)
    assert failure.option == "--on-error" and failure.what() == "--on-error abort: row 4 is bad"
    other = io.StringIO()  # no job reported it here: the CLI does, with the same fields
    report_failure(error, other)
    assert json.loads(other.getvalue())["option"] == "--on-error"
