"""A generation job's configuration, and the rows of shard k as a pure function of it.

``GenConfig.to_json()`` is the canonical config: it fixes every byte the job writes, so
the dataset's uuid is derived from it and ``--resume`` insists on it. Shard ``k`` is
generated from ``numpy.random.default_rng([seed, k])`` in chunks whose size depends only
on the config, so no worker count or assignment can change its content.
"""

from __future__ import annotations

import json
import math
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..augment.offline import Augmenter
from ..errors import OptionError, UserError, check_seed
from ..store.format import SAMPLE_DTYPES, row_nbytes
from ..units import human_bytes
from . import kmer1d, patterns2d, user
from .packing import GROUP_BLOCK_ROWS

BUILTIN = {"patterns2d": patterns2d, "kmer1d": kmer1d}
#: The genomes source (``core/genomes``): rows cut from FASTA/FASTQ files, not drawn.
GENOMES = "genomes"
BUILTIN_DEFAULTS = {
    "patterns2d": {"shape": (25, 25), "dtype": "float32"},
    "kmer1d": {"shape": (126,), "dtype": "uint16"},
    GENOMES: {"shape": (126,), "dtype": "uint16"},
}
#: Bumped whenever a built-in generator's output for the same config changes.
ALGORITHM_VERSION = 1
CHUNK_BYTES = 16 << 20
#: The largest sample a dataset may hold: generation holds a chunk of at least 256 of them.
MAX_SAMPLE_BYTES = 64 << 20
#: What to do with rows holding NaN/Inf: refuse them (the default) or drop them and count.
NONFINITE_POLICIES = ("error", "skip")
#: With ``skip``, a shard gives up once it has dropped this many times its own rows.
MAX_SKIP_FACTOR = 10
UUID_NAMESPACE = uuidlib.UUID("6c1b1a52-8f0e-4f0e-9a64-3f1c2f7b9d10")


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class GenConfig:
    generator: str  # "patterns2d", "kmer1d", or "file"
    n: int
    classes: int
    sample_shape: tuple[int, ...]
    dtype: str
    seed: int
    shard_rows: int
    params: dict[str, Any] = field(default_factory=dict)
    augment: dict[str, Any] | None = None
    class_names: list[str] = field(default_factory=list)
    file: str | None = None
    file_sha256: str | None = None
    on_nonfinite: str = "error"
    #: Rows carry a group (``store/columns.py``): the augmented copies of one source
    #: sample share its group; a user generator returning ``(x, y, groups)`` names its own.
    groups: bool = False
    #: Augmented copies are packed into units of this many rows (``packing.py``); 0: drawn
    #: freely (configs planned before the packed layout, user and genome groups).
    group_blocks: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {
            "generator": self.generator,
            "file": self.file,
            "file_sha256": self.file_sha256,
            "n": self.n,
            "classes": self.classes,
            "class_names": list(self.class_names),
            "sample_shape": list(self.sample_shape),
            "dtype": self.dtype,
            "seed": self.seed,
            "shard_rows": self.shard_rows,
            "params": self.params,
            "augment": self.augment,
            "algorithm": ALGORITHM_VERSION,
            "numpy": ".".join(np.__version__.split(".")[:2]),
        }
        if self.on_nonfinite != "error":  # the default is left out: configs stay as they were
            out["on_nonfinite"] = self.on_nonfinite
        if self.groups:  # (likewise)
            out["groups"] = True
        if self.group_blocks:
            out["group_blocks"] = self.group_blocks
        return out

    @property
    def columns(self) -> dict[str, str]:
        """The rows' columns (``store/columns.py``), name -> dtype text."""
        if self.generator == GENOMES:
            from ..genomes.source import columns

            return columns(self.params)
        return {"group": "int64"} if self.groups else {}

    def group_table(self) -> tuple[np.ndarray, list[str]] | None:
        """The index's table of group names (genomes: the genomes' names), or None."""
        if self.generator != GENOMES:
            return None
        from ..genomes.source import group_table

        return group_table(self.params)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GenConfig:
        return cls(
            generator=d["generator"],
            n=int(d["n"]),
            classes=int(d["classes"]),
            sample_shape=tuple(int(s) for s in d["sample_shape"]),
            dtype=str(d["dtype"]),
            seed=int(d["seed"]),
            shard_rows=int(d["shard_rows"]),
            params=dict(d["params"]),
            augment=d["augment"],
            class_names=list(d["class_names"]),
            file=d["file"],
            file_sha256=d["file_sha256"],
            on_nonfinite=str(d.get("on_nonfinite", "error")),
            groups=bool(d.get("groups", False)),
            group_blocks=int(d.get("group_blocks", 0)),
        )

    @property
    def uuid(self) -> str:
        return str(uuidlib.uuid5(UUID_NAMESPACE, canonical_json(self.to_json())))

    @property
    def num_shards(self) -> int:
        return max(1, math.ceil(self.n / self.shard_rows))

    def rows_of(self, k: int) -> int:
        return max(0, min(self.shard_rows, self.n - k * self.shard_rows))

    @property
    def chunk_rows(self) -> int:
        """Rows generated per call: about CHUNK_BYTES, a multiple of the augment copies."""
        per = max(1, row_nbytes(self.sample_shape, np.dtype(self.dtype)))
        rows = int(min(16384, max(256, CHUNK_BYTES // per)))
        copies = int((self.augment or {}).get("copies", 1))
        return max(copies, rows - rows % copies)


def resolve_config(
    generator: str,
    *,
    n: int | None,
    seed: int = 0,
    classes: int | None = None,
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
    params: dict[str, Any] | None = None,
    augment: dict[str, Any] | None = None,
    shard_rows: int | None = None,
    on_nonfinite: str = "error",
) -> GenConfig:
    """Fill in defaults and check everything that can be checked before running anything."""
    from ..store.format import default_capacity

    if generator == GENOMES:
        return genomes_config(
            n, seed, shape, dtype, params, augment, shard_rows, on_nonfinite, classes
        )
    if n is None:
        raise UserError(
            "--n: missing; give the number of rows to generate, e.g. --n 100000",
            option="--n",
            problem="missing",
            fix="give the number of rows to generate, e.g. --n 100000",
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserError(
            f"--n {n!r}: give the number of rows to generate (at least 1)",
            option="--n",
            value=n,
        )
    check_seed(seed)
    if on_nonfinite not in NONFINITE_POLICIES:
        raise OptionError("on-nonfinite", on_nonfinite, "unknown policy", "use error or skip")
    if classes is not None and (isinstance(classes, bool) or classes < 1):
        raise OptionError("classes", classes, "a dataset needs at least 1 class", "give 1..65535")
    if shard_rows is not None and (isinstance(shard_rows, bool) or shard_rows < 1):
        raise OptionError(
            "shard-rows",
            shard_rows,
            "a shard holds at least 1 row",
            "give e.g. 4096, or leave it out",
        )
    params = dict(params or {})
    is_file = generator not in BUILTIN
    if is_file and not generator.endswith(".py"):
        fix = "use patterns2d, kmer1d, genomes or a FILE.py defining generate(rng, n, params)"
        raise UserError(
            f"--generator {generator!r}: unknown; {fix}",
            option="--generator",
            value=generator,
            problem="unknown",
            fix=fix,
        )
    base: dict[str, Any] = BUILTIN_DEFAULTS.get(generator, {"shape": None, "dtype": "float32"})
    shape = tuple(int(s) for s in (shape or params.pop("shape", None) or base["shape"] or ()))
    if not shape:
        raise UserError(
            f"{generator}: give the sample shape with --shape (like 25x25 or 126)",
            option="--shape",
        )
    dtype = str(dtype or params.pop("dtype", None) or base["dtype"])
    if dtype not in SAMPLE_DTYPES:
        fix = f"use one of {', '.join(SAMPLE_DTYPES)}"
        raise UserError(
            f"--dtype {dtype}: not supported; {fix}",
            option="--dtype",
            value=dtype,
            problem="not supported",
            fix=fix,
        )
    if row_nbytes(shape, np.dtype(dtype)) > MAX_SAMPLE_BYTES:
        raise OptionError(
            "shape",
            "x".join(map(str, shape)),
            f"one {dtype} sample of this shape is {human_bytes(row_nbytes(shape, np.dtype(dtype)))}, "
            f"more than the {human_bytes(MAX_SAMPLE_BYTES)} a sample may be",
            "give a smaller shape",
        )
    classes = int(classes or params.pop("classes", None) or 5)
    if not 1 <= classes <= 65535:
        raise UserError(
            f"--classes {classes}: give an integer in 1..65535",
            option="--classes",
            value=classes,
        )
    params.update(shape=list(shape), classes=classes)
    file = digest = None
    if is_file:
        path = Path(generator).resolve()
        file, digest = str(path), user.file_digest(path)
        params["dtype"] = dtype
        names = user.class_names(path, classes)
    else:
        mod = BUILTIN[generator]
        params["dtype"] = dtype
        params = (
            kmer1d.resolve_params(params, seed)
            if generator == "kmer1d"
            else patterns2d.resolve_params(params)
        )
        names = mod.class_names(classes)
    if augment is not None:
        augment = Augmenter(augment, shape, dtype).spec
    groups = bool(augment and int(augment.get("copies", 1)) > 1)
    own_groups = is_file and user.returns_groups(str(file), params)
    # Copies that are their sample's group are packed into whole units (``packing.py``).
    group_blocks = GROUP_BLOCK_ROWS if groups and not own_groups else 0
    groups = groups or own_groups
    cap = shard_rows or default_capacity(shape, np.dtype(dtype))
    if cap < 1:
        raise UserError(
            f"--shard-rows {cap}: give a positive number of rows per shard",
            option="--shard-rows",
            value=cap,
        )
    return GenConfig(
        generator="file" if is_file else generator,
        n=n,
        classes=classes,
        sample_shape=tuple(int(s) for s in shape),
        dtype=dtype,
        seed=seed,
        shard_rows=int(min(cap, n)),
        params=params,
        augment=augment,
        class_names=names,
        file=file,
        file_sha256=digest,
        on_nonfinite=on_nonfinite,
        groups=groups,
        group_blocks=group_blocks,
    )


def genomes_config(
    n: int | None,
    seed: int,
    shape: tuple[int, ...] | None,
    dtype: str | None,
    params: dict[str, Any] | None,
    augment: dict[str, Any] | None,
    shard_rows: int | None,
    on_nonfinite: str,
    classes: int | None,
    *,
    need_class: bool = True,
) -> GenConfig:
    """The genomes source: its rows are counted from the manifest's files (which name
    each file's class unless ``need_class`` is False: genomes to predict)."""
    from ..genomes.source import resolve_params
    from ..store.format import default_capacity

    check_seed(seed)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise UserError(
            f"--n {n!r}: give the number of reads (at least 1), or leave it out",
            option="--n",
            value=n,
        )
    if augment is not None:
        raise OptionError(
            "augment",
            "...",
            "the genomes source writes no augmented copies",
            "augment k-mer rows while training: guiapp train --augment '{\"reverse\": true}'",
        )
    params = dict(params or {})
    shape = tuple(int(s) for s in (shape or params.pop("shape", None) or (126,)))
    params.pop("dtype", None)
    if len(shape) != 1 or shape[0] < 1:
        raise OptionError("shape", "x".join(map(str, shape)), "k-mer rows are 1-D", "give e.g. 126")
    p = resolve_params(params, seed, n, shape[0], need_class=need_class)
    names = list(p["class_names"])
    if classes is not None and classes != len(names):
        raise OptionError(
            "classes", classes, f"the manifest names {len(names)} classes", "leave --classes out"
        )
    vocab = int(p["tokenizer"]["vocab"])
    dtype = dtype or ("uint16" if vocab <= 65536 else "int32")
    if np.dtype(dtype).kind not in "iu" or np.iinfo(np.dtype(dtype)).max < vocab - 1:
        raise OptionError(
            "dtype", dtype, f"cannot hold tokens up to {vocab - 1}", "use uint16 or int32"
        )
    rows = int(p["rows"])
    cap = shard_rows or default_capacity(shape, np.dtype(dtype))
    return GenConfig(
        generator=GENOMES,
        n=rows,
        classes=len(names),
        sample_shape=shape,
        dtype=dtype,
        seed=seed,
        shard_rows=int(min(cap, rows)),
        params=p,
        augment=None,
        class_names=names,
        on_nonfinite=on_nonfinite,
        groups=True,
    )
