"""``ExperimentSpec``: a base training config and what varies, expanded into trials.

An experiment is a folder: ``spec.json`` (this spec, the one file the CLI, the GUI and
``--resume`` read), one ordinary run folder per trial, and the summaries (``experiment.json``,
``experiment.md``). What may vary: the folds of k-fold cross-validation, data fractions (a
scaling curve), and a grid or a seeded random sample over parameters (:mod:`.trial_params`).
A single run is an experiment of one trial whose run folder is the experiment folder.

Trials are ordered point by point (grid or random), then fraction, then fold; a trial's id
names what it varies (``fold-1``, ``fraction-0.1``, ``grid-002-fold-0``) and is its
folder's name.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write_text
from ..errors import Problem, UserError
from .config import TrainConfig, recorded_defaults
from .trial_params import apply_params, check_param_names

SPEC_FORMAT = "guiapp-experiment"
SPEC_VERSION = 1
SPEC_FILE = "spec.json"
SINGLE_TRIAL = "run"


@dataclass
class Trial:
    """One run of an experiment: its id, the parameters it sets and its full config."""

    id: str
    params: dict[str, Any]
    config: TrainConfig

    @property
    def run_dir(self) -> Path:
        return Path(self.config.out)

    def event_fields(self, index: int) -> dict[str, Any]:
        """What a ``trial`` event says of this trial (its ``status`` aside)."""
        return {
            "trial": self.id,
            "index": index,
            "params": self.params,
            "run_dir": str(self.run_dir),
        }


@dataclass
class ExperimentSpec:
    base: TrainConfig
    folds: list[int] = field(default_factory=list)  # fold indices of base.folds to train
    fractions: list[float] = field(default_factory=list)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    random: int = 0  # number of random points drawn from ``space``
    space: dict[str, Any] = field(default_factory=dict)
    seed: int = 0  # seed of the random sample
    parallel_trials: bool = False  # one trial per listed device at once

    @property
    def out(self) -> Path:
        return Path(self.base.out)

    @property
    def path(self) -> Path:
        return self.out / SPEC_FILE

    # ------------------------------------------------------------------ checks
    def check(self) -> list[str]:
        """Every problem of the spec and of each trial's config (``TrainConfig.check``)."""
        problems: list[str] = []
        if self.grid and self.random:
            problems.append(
                Problem("--grid and --random: choose one way to sample parameters", option="--grid")
            )
        if self.random < 0:
            problems.append(
                Problem(
                    f"--random {self.random}: give the number of trials (at least 1)",
                    option="--random",
                    value=self.random,
                )
            )
        if self.random and not self.space:
            problems.append(
                Problem(
                    "--random N needs --space FILE.json: the ranges to draw from", option="--space"
                )
            )
        for f in self.fractions:
            if not 0 < f <= 1:
                problems.append(
                    Problem(
                        f"--fractions: {f:g} is not in (0, 1]; e.g. 0.01,0.1,1.0",
                        option="--fractions",
                        value=f,
                    )
                )
        if self.folds and not self.base.folds:
            problems.append("folds to train were given without --folds K")
        for name, values in self.grid.items():
            if not values:
                problems.append(
                    Problem(
                        f"--grid {name}: give at least one value, e.g. {name}=1,2", option="--grid"
                    )
                )
        problems += check_param_names([*self.grid, *self.space])
        if problems:
            return problems
        try:
            trials = self.trials()
        except UserError as exc:
            return [str(exc)]
        seen: set[str] = set()
        for t in trials:
            for p in t.config.check():
                if p not in seen:
                    seen.add(p)
                    problems.append(p if len(trials) == 1 else _in_trial(t.id, p))
        return problems

    # ------------------------------------------------------------------ trials
    def points(self) -> list[dict[str, Any]]:
        """The parameter points: the grid's product, a random sample, or one empty point."""
        # Names in sorted order: the trials and their ids do not depend on the order the
        # options (or a JSON file, or a JSON round trip) gave them in.
        if self.grid:
            names = sorted(self.grid)
            return [
                dict(zip(names, values, strict=True))
                for values in itertools.product(*(self.grid[n] for n in names))
            ]
        if self.random:
            rng = np.random.default_rng(self.seed)
            return [
                {n: _draw(rng, n, self.space[n]) for n in sorted(self.space)}
                for _ in range(self.random)
            ]
        return [{}]

    def trials(self) -> list[Trial]:
        kind = "grid" if self.grid else "random" if self.random else ""
        out = []
        for i, point in enumerate(self.points()):
            fractions: list[float | None] = [*self.fractions] or [None]
            folds: list[int | None] = [*self.folds] or [None]
            for fraction in fractions:
                for fold in folds:
                    parts, params = [], dict(point)
                    if kind:
                        parts.append(f"{kind}-{i:03d}")
                    if fraction is not None:
                        parts.append(f"fraction-{float(fraction)}")
                        params["fraction"] = float(fraction)
                    if fold is not None:
                        parts.append(f"fold-{fold}")
                        params["fold"] = fold
                    tid = "-".join(parts) or SINGLE_TRIAL
                    run_dir = self.out / tid if parts else self.out
                    cfg = apply_params(self.base, params)
                    cfg = dataclasses.replace(cfg, out=str(run_dir))
                    if fraction is not None and cfg.max_steps:
                        # A cap on the steps scales with the fraction: a trial trains on
                        # its fraction of what the whole data's trial trains on.
                        steps = max(1, math.ceil(cfg.max_steps * float(fraction)))
                        cfg = dataclasses.replace(cfg, max_steps=steps)
                    out.append(Trial(tid, params, cfg))
        return out

    def varied(self) -> list[str]:
        """The parameter names that differ between trials, in column order."""
        names = sorted(self.grid or self.space)
        if self.fractions:
            names.append("fraction")
        if self.folds:
            names.append("fold")
        return names

    # ------------------------------------------------------------------ the file
    def to_json(self) -> dict[str, Any]:
        return {
            "format": SPEC_FORMAT,
            "version": SPEC_VERSION,
            "base": self.base.to_json(),
            "folds": list(self.folds),
            "fractions": list(self.fractions),
            "grid": dict(self.grid),
            "random": self.random,
            "space": dict(self.space),
            "seed": self.seed,
            "parallel_trials": self.parallel_trials,
        }

    @classmethod
    def from_json(cls, obj: Any, where: str = SPEC_FILE) -> ExperimentSpec:
        if not isinstance(obj, dict) or obj.get("format") != SPEC_FORMAT:
            raise UserError(f"{where}: not a guiapp experiment spec (no format {SPEC_FORMAT!r})")
        if int(obj.get("version", 0)) > SPEC_VERSION:
            raise UserError(
                f"{where}: written by a newer guiapp (spec version {obj['version']}); update guiapp"
            )
        known = {f.name for f in dataclasses.fields(cls)} | {"format", "version"}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise UserError(f"{where}: unknown experiment setting(s) {', '.join(unknown)}")
        fields_ = {k: v for k, v in obj.items() if k not in ("format", "version", "base")}
        base = obj.get("base")
        base = recorded_defaults(base) if isinstance(base, dict) else base
        return cls(base=TrainConfig.from_json(base, f"{where}: base"), **fields_)

    def save(self) -> None:
        """Write ``OUT/spec.json`` atomically."""
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ExperimentSpec:
        """Read a spec file; its trials run in the folder that holds it."""
        path = Path(path)
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(
                f"{path}: no such experiment spec; start the experiment without --resume"
            ) from None
        except (OSError, ValueError, RecursionError) as exc:
            raise UserError(f"{path}: cannot read the experiment spec ({exc})") from None
        spec = cls.from_json(obj, str(path))
        spec.base = dataclasses.replace(spec.base, out=str(path.parent))
        return spec

    @classmethod
    def of_folder(cls, folder: str | Path) -> ExperimentSpec:
        """The experiment in ``folder``: its spec.json, else (a run from before experiments)
        a one-trial spec of the config its config.json records."""
        folder = Path(folder)
        if (folder / SPEC_FILE).exists():
            return cls.load(folder / SPEC_FILE)
        try:
            recorded = json.loads((folder / "config.json").read_text(encoding="utf-8"))["config"]
        except (OSError, ValueError, KeyError, TypeError):
            raise UserError(f"{folder}: neither spec.json nor config.json: no run here") from None
        cfg = dataclasses.replace(
            TrainConfig.from_json(recorded_defaults(recorded)), out=str(folder)
        )
        return cls(base=cfg)


def resume_spec_path(folder: str | Path) -> Path:
    """The ``spec.json`` that resumes the run or experiment in ``folder`` (``guiapp train
    --spec PATH --resume``), written from its ``config.json`` for a run from before
    experiments."""
    spec = ExperimentSpec.of_folder(folder)
    if not spec.path.exists():
        spec.save()
    return spec.path


def parse_fractions(text: str) -> list[float]:
    """``"0.01,0.1,1.0"`` -> ``[0.01, 0.1, 1.0]`` (the check is :func:`.config.parse_fractions`)."""
    from .config import parse_fractions as parse

    return parse(text) or []


def parse_grid(text: str) -> dict[str, list[Any]]:
    """``"learning_rate=0.001,0.003;batch=64,128"`` -> ``{"learning_rate": [...], ...}``.

    Values are JSON where they parse (numbers, true/false), else strings (``optimizer=adam,sgd``).
    """
    grid: dict[str, list[Any]] = {}
    for part in (p.strip() for p in text.split(";") if p.strip()):
        name, eq, values = part.partition("=")
        if not eq or not name.strip() or not values.strip():
            raise UserError(
                f"--grid {text!r}: {part!r} is not NAME=V1,V2; use e.g. "
                "'learning_rate=0.001,0.003;batch=64,128'"
            )
        grid[name.strip()] = [_value(v.strip()) for v in values.split(",") if v.strip()]
    if not grid:
        raise UserError(f"--grid {text!r}: no parameters; use e.g. 'learning_rate=0.001,0.003'")
    return grid


def load_space(path: str | Path) -> dict[str, Any]:
    """A ``--space`` file: ``{"learning_rate": {"log_uniform": [1e-4, 1e-2]}, "batch":
    {"choice": [32, 64]}, "dropout": {"uniform": [0, 0.5]}, "filters": {"int": [8, 32]}}``
    (a plain list is a choice)."""
    try:
        space = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"--space {path}: cannot read it as JSON ({exc})") from None
    if not isinstance(space, dict) or not space:
        raise UserError(
            f'--space {path}: give an object, e.g. {{"dropout": {{"uniform": [0, 0.5]}}}}'
        )
    for name, d in space.items():
        _check_distribution(str(path), name, d)
    return space


DISTRIBUTIONS = ("uniform", "log_uniform", "int", "choice")


def _check_distribution(where: str, name: str, d: Any) -> None:
    if isinstance(d, list) and d:
        return
    ok = isinstance(d, dict) and len(d) == 1 and next(iter(d)) in DISTRIBUTIONS
    if ok:
        kind, arg = next(iter(d.items()))
        ok = isinstance(arg, list) and (
            bool(arg) if kind == "choice" else len(arg) == 2 and arg[0] <= arg[1]
        )
        if ok and kind == "log_uniform":
            ok = arg[0] > 0
    if not ok:
        raise UserError(
            f"--space {where}: {name}: {json.dumps(d)} is not a distribution; use "
            '{"uniform": [lo, hi]}, {"log_uniform": [lo, hi]} (lo > 0), {"int": [lo, hi]} '
            'or {"choice": [a, b]}'
        )


def _draw(rng: np.random.Generator, name: str, d: Any) -> Any:
    if isinstance(d, list):
        return d[int(rng.integers(len(d)))]
    kind, arg = next(iter(d.items()))
    if kind == "choice":
        return arg[int(rng.integers(len(arg)))]
    if kind == "int":
        return int(rng.integers(int(arg[0]), int(arg[1]) + 1))
    if kind == "log_uniform":
        value = float(np.exp(rng.uniform(np.log(arg[0]), np.log(arg[1]))))
    else:
        value = float(rng.uniform(arg[0], arg[1]))
    return float(f"{value:.4g}")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _in_trial(trial: str, problem: str) -> str:
    """``problem`` of one trial's config, prefixed with the trial (its fields kept)."""
    text = f"trial {trial}: {problem}"
    if isinstance(problem, Problem):
        return Problem(text, option=problem.option, value=problem.value)
    return text
