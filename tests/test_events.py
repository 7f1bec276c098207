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
