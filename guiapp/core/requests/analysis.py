"""The requests of the GUI's analysis and check jobs: ``guiapp explain``, ``embed``,
``labels`` and ``check``, and the reference that runs (or resumes) a saved experiment
spec with ``guiapp train --spec``.

Each field is an option of the command's parser (``guiapp/cli/<command>.py``) with its
flag, type and default (``tests/test_requests_analysis.py`` holds them to it), so the GUI
builds a request and runs :func:`~guiapp.core.requests.argv.to_argv` of it instead of an
argument list of its own. The CLI still declares these parsers itself; a field here
covers the options the GUI gives (``labels --predictions`` is the command line's alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Request, opt

_EVENTS = "'-' to print JSON-line events on stdout"


@dataclass(frozen=True, kw_only=True)
class _ModelRequest(Request):
    """A job that runs a trained model (a run's best or last, or a MODEL.keras file)."""

    model: str = opt(path=True, help="a run folder or a MODEL.keras file")
    which: str = opt("best", choices=("best", "last"), help="a run's model")


@dataclass(frozen=True, kw_only=True)
class ExplainRequest(_ModelRequest):
    """``guiapp explain``: attribution maps of chosen rows."""

    COMMAND: ClassVar[str] = "explain"

    data: str = opt(path=True, help="the dataset NAME.h5 the rows are in")
    #: ``3,10-12`` (as typed on the command line)
    rows: str = opt(help="rows, e.g. 3,10-12 (at most 10,000)")
    #: always written: the Browser's jobs have always named their class
    target: str = opt(
        "pred", flag="--class", always=True, help="pred (default) or a class name or index"
    )
    methods: str | None = opt(
        None, help="ig,occlusion,gradcam,hirescam (default: every one the model has)"
    )
    out: str | None = opt(None, path=True, help="the cache folder (default: RUN/explain)")
    events: str | None = opt(None, run=True, help=_EVENTS)


@dataclass(frozen=True, kw_only=True)
class EmbedRequest(_ModelRequest):
    """``guiapp embed``: each row's penultimate-layer activations and a 2-D map."""

    COMMAND: ClassVar[str] = "embed"

    data: str = opt(path=True, help="the dataset NAME.h5")
    out: str = opt(path=True, help="EMB.h5 to write")
    split: str = opt("all", choices=("all", "train", "val", "test"))
    max_rows: int = opt(1_000_000, help="sample above this many rows")
    seed: int = opt(0, help="the sample's seed")
    batch: int = opt(512)
    events: str | None = opt(None, run=True, help=_EVENTS)


@dataclass(frozen=True, kw_only=True)
class LabelsRequest(Request):
    """``guiapp labels --experiment``: a k-fold experiment's likely label issues."""

    COMMAND: ClassVar[str] = "labels"

    experiment: str = opt(path=True, help="a k-fold experiment (or run) folder")
    out: str = opt(path=True, help="the ranked CSV to write")
    rank_by: str = opt("self_confidence", help="self_confidence or normalized_margin")
    all: bool = opt(False, help="every row, the likely issues first")
    class_name: str | None = opt(None, flag="--class", help="only rows labelled NAME")
    events: str | None = opt(None, run=True, help=_EVENTS)


@dataclass(frozen=True, kw_only=True)
class CheckRequest(Request):
    """``guiapp check``: validate a dataset (or, with ``leakage``, a run's splits)."""

    COMMAND: ClassVar[str] = "check"

    path: str = opt(positional=True, path=True, help="the dataset's index file NAME.h5")
    full: bool = opt(False, help="also scan all samples for NaN/Inf and verify shard hashes")
    leakage: bool = opt(False, help="report what crosses the split of --run")
    run: str | None = opt(None, path=True, help="with --leakage: the run (or experiment) folder")
    json: bool = opt(False, help="print one JSON object")


@dataclass(frozen=True, kw_only=True)
class TrainSpecRequest(Request):
    """``guiapp train --spec SPEC [--resume]``: run the experiment a saved ``spec.json``
    declares (every setting is in that file), or continue it."""

    COMMAND: ClassVar[str] = "train"

    spec: str = opt(path=True, help="the experiment spec.json the GUI (or a run) wrote")
    resume: bool = opt(False, run=True, help="continue the experiment")
    events: str | None = opt(None, run=True, help=_EVENTS)
