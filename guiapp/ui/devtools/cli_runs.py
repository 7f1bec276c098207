"""The screenshot tools' own jobs: datasets generated and runs trained as the GUI starts them,
from request objects (``GenerateRequest``, a saved experiment spec run by
``TrainSpecRequest``), never an argument list, in a child process that must succeed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from guiapp.core.model.templates import fit_template
from guiapp.core.requests import GenerateRequest, Request, TrainSpecRequest, to_argv
from guiapp.core.store import Dataset
from guiapp.core.train.config import TrainConfig
from guiapp.core.train.experiment_spec import ExperimentSpec
from guiapp.ui.jobs.cli_job import cli_prefix


def run_request(req: Request) -> None:
    """``guiapp COMMAND`` of ``req`` in a child; its stderr's end in the error if it fails."""
    args = [req.COMMAND, *to_argv(req)]
    done = subprocess.run([*cli_prefix(), *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"guiapp {' '.join(args)}: {done.stderr[-2000:]}")


def generate(out: Path, generator: str, n: int, seed: int = 0) -> Path:
    run_request(GenerateRequest(out=str(out), generator=generator, n=n, seed=seed))
    return out


def train(
    data: Path,
    model: str | dict[str, Any],
    out: Path,
    *,
    fractions: list[float] | None = None,
    grid: dict[str, list[Any]] | None = None,
    **options: Any,
) -> Path:
    """A run (or an experiment: ``folds``, ``fractions``, ``grid``) of ``model`` (a template
    name or a spec) on ``data`` into ``out``, as the Training page starts one: its spec.json
    saved, then ``guiapp train --spec``. ``options``: TrainConfig fields (epochs, batch, ...)."""
    if isinstance(model, str):
        with Dataset(data) as ds:
            model = fit_template(model, ds.sample_shape, ds.num_classes)
    base = TrainConfig(data=str(data), model=model, out=str(out), **options)
    spec = ExperimentSpec(
        base=base,
        folds=list(range(base.folds)) if base.folds else [],
        fractions=fractions or [],
        grid=grid or {},
    )
    spec.save()
    run_request(TrainSpecRequest(spec=str(spec.path)))
    return out
