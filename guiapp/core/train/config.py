"""``TrainConfig``: everything a training run needs, resolved and checked before it starts.

It is the one typed form of a run's settings: the CLI builds it from its options, the GUI
from its form, and both write it into an experiment's ``spec.json``
(:mod:`.experiment_spec`); a run folder's ``config.json`` records it under ``"config"``.
:meth:`TrainConfig.from_json` reads any of them back (resume never rebuilds argv).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..errors import SEED_MAX, TOO_DEEP, OptionError, Problem, UserError, json_problem


@dataclass
class TrainConfig:
    data: str
    model: dict[str, Any]
    out: str
    epochs: int = 1
    batch: int = 256  # per replica; global batch = batch x replicas
    val: float = 0.1
    test: float = 0.0
    folds: int = 0
    fold: int = 0
    fraction: float = 1.0
    seed: int = 0
    devices: str = "auto"
    cluster: str | None = None
    worker_index: int = 0
    log_every: int = 20
    checkpoint_every: int = 200
    block_rows: int = 0  # 0: automatic (1024, smaller for small datasets)
    window_blocks: int = 8
    chunk_rows: int = 64
    augment: dict[str, Any] = field(default_factory=dict)
    class_weights: str | None = None
    max_steps: int = 0  # stop after this many steps per epoch (0: all); for quick runs
    early_stopping: int = 0  # stop after this many epochs without a better val accuracy (0: off)
    tensorboard: bool = True  # also write TensorBoard event files into RUN_DIR/tensorboard
    # Training steps per tf.function call (one Python round trip per call). 0 (auto): as
    # many as take about 50 ms on one device (``steps.CallSizer``; one step a call on
    # several). Results do not depend on it: calls end at every log, checkpoint and epoch
    # boundary.
    steps_per_call: int = 0
    #: How the splits, folds and fractions are cut: ``groups`` keeps every group of rows
    #: whole (rows without groups are each their own group); ``rows`` lets groups cross
    #: splits, and the run says so wherever it shows its scores.
    split_by: str = "groups"
    #: ``exact``: splits, folds and fractions hold as many blocks as asked (to within one
    #: block); ``hash``: each block's split drawn by its hash alone, as runs from before
    #: ``exact`` were (a resumed or re-read old run keeps it: :func:`recorded_defaults`).
    split_sizes: str = "exact"
    #: ``auto``: rows read once into memory when the dataset takes at most ``cache_share``
    #: of the available memory; ``memory``: always (refused when it cannot fit); ``off``:
    #: read from the files every epoch. The batches are the same either way
    #: (``core/pipeline/cache.py``).
    cache: str = "auto"
    cache_share: float = 0.5

    @classmethod
    def from_json(cls, obj: Any, where: str = "config") -> TrainConfig:
        """The config a ``to_json`` dict describes; unknown or missing keys are a UserError."""
        if not isinstance(obj, dict):
            raise UserError(f"{where}: a training config must be a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(obj) - names)
        if unknown:
            raise UserError(
                f"{where}: unknown training setting(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(names))})"
            )
        missing = [k for k in ("data", "model", "out") if k not in obj]
        if missing:
            raise UserError(f"{where}: the training config lacks {', '.join(missing)}")
        return cls(**obj)

    def validation_split(self) -> str | None:
        """The split the run validates (and reports) on: val, else test, else none."""
        if self.val > 0 or self.folds:
            return "val"
        return "test" if self.test > 0 else None

    def block_rows_for(self, rows: int) -> int:
        """Blocks of 1024 rows, but at least ~256 blocks for small datasets (finer splits)."""
        if self.block_rows:
            return self.block_rows
        b = 1024
        while b > 32 and rows // b < 256:
            b //= 2
        return b

    def check(self) -> list[str]:
        """Every problem with the options, one message each (empty when all is well).

        The one place training options are validated; each check in :data:`CHECKS` is a
        self-contained function of the config, run before any file or TensorFlow is touched.
        """
        return [p for check in CHECKS for p in (check(self),) if p]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def identity_fields(self) -> dict[str, Any]:
        """What must not change between a run and its resume (not out/devices/logging)."""
        keep = {k: v for k, v in self.to_json().items() if k not in RESUMABLE_CHANGES}
        if not keep.get("early_stopping"):  # runs from before early stopping keep their hash
            keep.pop("early_stopping", None)
        if keep.get("split_by") == "groups":  # runs from before grouped splits keep theirs
            keep.pop("split_by", None)
        if keep.get("split_sizes") == "hash":  # ... and runs from before exact split sizes
            keep.pop("split_sizes", None)
        return keep

    def splits(self, fold: int | None = None) -> Any:
        """The ``SplitSpec`` of this run (its own fold unless ``fold`` is given)."""
        from ..pipeline.read_plan import SplitSpec

        f = (self.fold if fold is None else fold) if self.folds else 0
        return SplitSpec(
            val=self.val, test=self.test, folds=self.folds, fold=f, seed=self.seed,
            exact=self.split_sizes == "exact",
        )  # fmt: skip

    def describe_split(self, ds: Any) -> dict[str, Any]:
        """How this run splits the dataset ``ds``: its config's and its ``started`` event's
        ``split``, the Training page's preview (:func:`.group_split.describe_split`)."""
        from ..pipeline.group_split import describe_split

        return describe_split(
            ds,
            self.splits(),
            fraction=self.fraction,
            split_by=self.split_by,
            block_rows=self.block_rows_for(len(ds)),
        )

    def identity(self) -> str:
        keep = self.identity_fields()
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]

    def differences(self, recorded: dict[str, Any]) -> list[str]:
        """``"--seed: the run has 0, now 1"`` for each identity field that differs from a
        recorded ``to_json()`` (a run folder's ``config.json["config"]``)."""
        out = []
        for key, now in self.identity_fields().items():
            then = recorded.get(key)
            if then == now:
                continue
            name = "--" + key.replace("_", "-") if key in OPTION_NAMES else key
            if key == "model":
                out.append("the model spec differs")
            elif key == "data":
                out.append(f"--data: the run has {then}, now {now}")
            else:
                out.append(f"{name}: the run has {json.dumps(then)}, now {json.dumps(now)}")
        return out


def recorded_defaults(recorded: dict[str, Any]) -> dict[str, Any]:
    """A config recorded by an earlier guiapp (a run's ``config.json``, an experiment's
    ``spec.json`` base), with the settings it ran with where a later field's default
    differs: its split sizes were drawn by hash."""
    return {"split_sizes": "hash", **recorded}


def check_split_sizes(cfg: TrainConfig) -> str | None:
    if cfg.split_sizes in ("exact", "hash"):
        return None
    return f"split_sizes {cfg.split_sizes!r}: use exact (the default) or hash"


#: Fields that may change between a run and its resume.
RESUMABLE_CHANGES = (
    "out",
    "devices",
    "log_every",
    "checkpoint_every",
    "cluster",
    "worker_index",
    "epochs",
    "tensorboard",
    "steps_per_call",
    "cache",
    "cache_share",
)
#: Fields that are ``guiapp train`` options of the same name (with dashes).
OPTION_NAMES = (
    "data", "epochs", "batch", "val", "test", "folds", "fold", "seed", "devices", "augment",
    "class_weights", "max_steps", "log_every", "checkpoint_every", "worker_index",
    "early_stopping", "steps_per_call", "split_by", "cache", "cache_share",
)  # fmt: skip


# -- the checks: each returns one problem, or None --------------------------------------------
Check = Callable[[TrainConfig], str | None]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _refused(option: str, value: Any, problem: str = "", fix: str = "") -> Problem:
    """The one form of a refused option: ``"<option> <value>: <problem>; <fix>"`` (either
    half may be left out), naming the option, the value and the fix."""
    text = "; ".join(part for part in (problem, fix) if part)
    return Problem(f"{option} {value}: {text}", option=option, value=value, fix=fix or None)


def _at_least(name: str, least: int, fix: str) -> Check:
    def check(cfg: TrainConfig) -> str | None:
        v = getattr(cfg, name)
        if _is_int(v) and v >= least:
            return None
        return _refused("--" + name.replace("_", "-"), v, f"must be an integer >= {least}", fix)

    check.__name__ = f"check_{name}"
    return check


def _one_of(name: str, allowed: tuple[Any, ...], problem: str = "", fix: str = "") -> Check:
    def check(cfg: TrainConfig) -> str | None:
        v = getattr(cfg, name)
        return None if v in allowed else _refused("--" + name.replace("_", "-"), v, problem, fix)

    check.__name__ = f"check_{name}"
    return check


def check_fractions(cfg: TrainConfig) -> str | None:
    if 0 <= cfg.val < 1 and 0 <= cfg.test < 1 and cfg.val + cfg.test < 1:
        return None
    return Problem(
        f"--val {cfg.val} --test {cfg.test}: fractions must be >= 0 and sum below 1; e.g. --val 0.1",
        option="--val",
        value=cfg.val,
        fix="e.g. --val 0.1",
    )


def check_folds(cfg: TrainConfig) -> str | None:
    if cfg.folds == 1 or cfg.folds < 0:
        return _refused("--folds", cfg.folds, fix="use 0 (no folds) or at least 2")
    if cfg.folds and not 0 <= cfg.fold < cfg.folds:
        problem = f"not in 0..{cfg.folds - 1} (there are {cfg.folds} folds)"
        return _refused("--fold", cfg.fold, problem)
    return None


def check_fraction(cfg: TrainConfig) -> str | None:
    if 0 < cfg.fraction <= 1:
        return None
    problem = "each fraction must be in (0, 1], like 0.1,0.5,1.0"
    return _refused("--fractions", cfg.fraction, problem)


def check_seed(cfg: TrainConfig) -> str | None:
    if _is_int(cfg.seed) and 0 <= cfg.seed <= SEED_MAX:
        return None
    return _refused("--seed", cfg.seed, f"a seed is an integer in 0..{SEED_MAX}", "give e.g. 0")


def check_augment(cfg: TrainConfig) -> str | None:
    problem = _augment_problem(cfg)
    return None if problem is None else Problem(problem, option="--augment")


def _augment_problem(cfg: TrainConfig) -> str | None:
    from ..augment.online import AugmentSpec
    from ..augment.registry import ONLINE_KEYS

    if not isinstance(cfg.augment, dict):
        return (
            f'--augment: give a JSON object like {{"flip_h": true}}, not {json.dumps(cfg.augment)}'
        )
    for key, value in cfg.augment.items():
        if key not in ONLINE_KEYS:
            continue
        numeric = ONLINE_KEYS[key].value is not None
        ok = (
            (isinstance(value, (int, float)) and not isinstance(value, bool))
            if numeric
            else (isinstance(value, bool))
        )
        if not ok:
            want = "a number" if numeric else "true or false"
            return f"--augment: {key} must be {want}, got {json.dumps(value)}"
    try:
        AugmentSpec.from_json(cfg.augment)
    except (ValueError, TypeError) as exc:
        return f"--augment {json.dumps(cfg.augment)}: {exc}"
    return None


def check_early_stopping(cfg: TrainConfig) -> str | None:
    if not _is_int(cfg.early_stopping) or cfg.early_stopping < 0:
        fix = "use 0 (off) or a patience in epochs"
        return _refused("--early-stopping", cfg.early_stopping, fix=fix)
    if cfg.early_stopping and cfg.validation_split() is None:
        fix = "give --val, --test or --folds"
        text = f"--early-stopping needs a validation split: {fix}"
        return Problem(text, option="--val", value=cfg.val, fix=fix)
    return None


def check_devices(cfg: TrainConfig) -> str | None:
    spec = str(cfg.devices or "auto").strip().lower()
    if spec in ("auto", "cpu", "gpu"):
        return None
    kind, _, rest = spec.partition(":")
    parts = rest.split(",") if kind == "gpu" else [rest]
    digits = kind in ("cpu", "gpu") and all(p.strip().isdigit() for p in parts)
    if digits and (kind == "gpu" or int(rest) >= 1):
        return None
    return _refused("--devices", cfg.devices, fix="use auto, cpu, cpu:N (N >= 1), gpu or gpu:0,1")


def check_cache(cfg: TrainConfig) -> str | None:
    if cfg.cache not in ("auto", "memory", "off"):
        return _refused("--cache", cfg.cache, fix="use auto (the default), memory or off")
    share = cfg.cache_share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        fix = "give a share of the available memory in (0, 1], e.g. 0.5"
        return _refused("--cache-share", share, fix=fix)
    return None


CHECKS: list[Check] = [
    _at_least("epochs", 1, "train at least 1 epoch"),
    _at_least("batch", 1, "the batch size must be at least 1"),
    check_fractions,
    check_folds,
    check_fraction,
    check_seed,
    _at_least("max_steps", 0, "0 trains every step of an epoch"),
    _at_least("log_every", 1, "emit a batch event every N >= 1 steps"),
    _at_least("checkpoint_every", 1, "checkpoint every N >= 1 steps"),
    _at_least("steps_per_call", 0, "0 sizes each call to about 50 ms of steps"),
    _at_least("worker_index", 0, "workers are numbered from 0"),
    check_augment,
    check_early_stopping,
    _one_of("class_weights", (None, "balanced"), fix="use balanced, or leave it out"),
    check_devices,
    _one_of(
        "split_by",
        ("groups", "rows"),
        "use groups (the default: every group of rows stays in one split) or rows (groups "
        "may cross splits)",
    ),
    check_split_sizes,
    check_cache,
]


def parse_augment(text: str | None) -> dict[str, Any]:
    """``--augment`` JSON as a dict; an OptionError when it is not a JSON object."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        problem = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else TOO_DEEP
        raise OptionError(
            "augment",
            text if len(text) <= 80 else text[:40] + "...",
            problem,
            'give an object like {"flip_h": true}',
        ) from None
    if not isinstance(value, dict):
        raise OptionError("augment", text, "not a JSON object", 'give one like {"flip_h": true}')
    return value


def parse_fractions(text: str | None) -> list[float] | None:
    """``--fractions 0.1,0.5,1.0`` as floats, each in (0, 1]; an OptionError otherwise."""
    if not text:
        return None
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise OptionError(
                "fractions", text, f"{part.strip()!r} is not a number", "give e.g. 0.1,0.5,1.0"
            ) from None
    bad = [v for v in values if not 0 < v <= 1]
    if bad:
        raise OptionError(
            "fractions", text, f"{bad[0]:g} is not in (0, 1]", "give fractions like 0.1,0.5,1.0"
        )
    return values
