"""The rows of shard k as a pure function of a ``GenConfig``: ``Source`` generates,
augments (packing copies, ``packing.py``) and casts them chunk by chunk, and says where its
stream stands (``ShardResume``) so a stopped job continues with the very same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..augment.offline import Augmenter
from ..errors import UserError, nonfinite_generated
from . import user
from .packing import packed_copies, packed_order
from .spec import BUILTIN, GENOMES, MAX_SKIP_FACTOR, GenConfig

#: A generated row's group: ``(shard << GROUP_SHIFT) + the index of its source sample in
#: the shard`` (built-in generators and augmented copies), or the user's own group ids.
GROUP_SHIFT = 32


def nonfinite_rows(x: np.ndarray) -> np.ndarray | None:
    """A mask of the rows holding NaN/Inf, or None when every value is finite (cheap then)."""
    if x.dtype.kind != "f" or x.size == 0:
        return None
    flat = x.reshape(len(x), -1)
    if np.isfinite(flat.min()) and np.isfinite(flat.max()):
        return None
    bad: np.ndarray = ~np.isfinite(flat).all(axis=1)
    return bad if bad.any() else None


class Source:
    """Makes batches of finished rows (generated, augmented, cast) for a config."""

    def __init__(self, cfg: GenConfig) -> None:
        self.cfg = cfg
        self.dtype = np.dtype(cfg.dtype)
        self.aug = Augmenter(cfg.augment, cfg.sample_shape, cfg.dtype) if cfg.augment else None
        if cfg.generator == "file":
            assert cfg.file is not None
            if user.file_digest(cfg.file) != cfg.file_sha256:
                raise UserError(
                    f"{cfg.file}: the generator file changed after the job was planned. "
                    "Rerun the command"
                )
            self._fn = user.load(cfg.file)
        self.skipped = 0  # rows with NaN/Inf dropped from the last shard (``skip``)
        #: The kept fields of the rows ``batch`` made last (the genomes source's).
        self.kept: dict[str, np.ndarray] = {}
        self.sources = 0  # source samples the last ``batch`` drew

    def _generate(
        self, rng: np.random.Generator, n: int, first_source: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        cfg = self.cfg
        if cfg.generator == GENOMES:
            from ..genomes.source import generate_rows

            k, done = first_source >> GROUP_SHIFT, first_source & ((1 << GROUP_SHIFT) - 1)
            start = k * cfg.shard_rows + done
            x, y, g, self.kept = generate_rows(cfg.params, cfg.seed, start, n, rng)
            return x, y, g
        if cfg.generator == "file":
            assert cfg.file is not None
            return user.call(self._fn, cfg.file, rng, n, cfg.params)
        x, y = BUILTIN[cfg.generator].generate(rng, n, cfg.params)
        return x, y, None

    def batch(
        self, rng: np.random.Generator, n: int, first_source: int = 0, at: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``n`` finished rows (the dataset's rows ``at..at+n``) and, when the config has
        groups, each row's group (its source sample ``first_source + i``, or the user's
        group). :attr:`sources` says how many source samples the call drew."""
        copies = self.aug.copies if self.aug is not None else 1
        if self.cfg.group_blocks and copies > 1:
            return self._packed(rng, n, first_source, at, copies)
        m = -(-n // copies)
        x, y, g = self._generate(rng, m, first_source)
        self.sources = m
        if self.cfg.groups and g is None:
            g = first_source + np.arange(m, dtype=np.int64)
        if self.aug is None:
            return x.astype(self.dtype, copy=False), y, g
        if copies > 1:
            x, y = np.repeat(x, copies, axis=0), np.repeat(y, copies)
            g = None if g is None else np.repeat(g, copies)
        x = self.aug.apply(rng, x)
        keep = rng.permutation(len(x))[:n]
        return x[keep].astype(self.dtype, copy=False), y[keep], None if g is None else g[keep]

    def _packed(
        self, rng: np.random.Generator, n: int, first_source: int, at: int, copies: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``batch`` in the packed layout (``packing.py``): each unit of rows holds its
        samples' copies whole (one sample may keep fewer), shuffled inside the unit."""
        assert self.aug is not None
        unit = self.cfg.group_blocks
        kept = packed_copies(at, n, copies, unit)
        m = len(kept)
        x, y, _ = self._generate(rng, m, first_source)
        self.sources = m
        g = np.repeat(first_source + np.arange(m, dtype=np.int64), kept)
        x = self.aug.apply(rng, np.repeat(x, kept, axis=0))
        order = packed_order(rng, at, n, unit)
        return x[order].astype(self.dtype, copy=False), np.repeat(y, kept)[order], g[order]

    @property
    def where(self) -> str:
        return self.cfg.file or f"generator {self.cfg.generator}"

    def refuse_nonfinite(self, x: np.ndarray, bad: np.ndarray, first_row: int, k: int) -> None:
        count = int(x.size - np.count_nonzero(np.isfinite(x)))
        at = f"row {first_row + int(np.flatnonzero(bad)[0])} (shard {k})"
        raise nonfinite_generated(self.where, count, len(x), at)

    def shard(
        self, k: int, rows: int | None = None, start: ShardResume | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """Shard ``k``'s rows, chunk by chunk: a pure function of (config, seed, k).

        Rows holding NaN/Inf are refused (``on_nonfinite="error"``) or dropped and drawn
        again from the same stream (``"skip"``; :attr:`skipped` counts them). Without such
        rows the stream of calls, and so every byte, is the same under either policy.
        After each chunk :meth:`resume_point` says where the stream stands; ``start`` (one
        such point) continues the stream from there with the very same bytes.
        """
        cfg = self.cfg
        rows = cfg.rows_of(k) if rows is None else rows
        rng = np.random.default_rng([cfg.seed, k])
        chunk = cfg.chunk_rows
        self.skipped = 0
        done = sources = 0
        if start is not None:
            rng.bit_generator.state = start.rng_state
            done, self.skipped, sources = start.rows, start.skipped, start.sources
        self._rng, self._done, self._sources = rng, done, sources
        while done < rows:
            x, y, g = self.batch(
                rng, min(chunk, rows - done), (k << GROUP_SHIFT) + sources,
                k * cfg.shard_rows + done,
            )  # fmt: skip
            sources += self.sources
            self._sources = sources
            bad = nonfinite_rows(x)
            if bad is not None:
                if cfg.on_nonfinite != "skip":
                    self.refuse_nonfinite(x, bad, k * cfg.shard_rows + done, k)
                self.skipped += int(bad.sum())
                if self.skipped > MAX_SKIP_FACTOR * max(rows, chunk):
                    raise UserError(
                        f"{self.where}: gave up on shard {k}: {self.skipped} of its rows held "
                        "NaN/Inf and were skipped. Fix the generator"
                    )
                x, y = x[~bad], y[~bad]
                g = None if g is None else g[~bad]
            done += len(x)
            self._done = done
            if len(x):
                yield x, y, g

    def resume_point(self) -> ShardResume:
        """Where the current shard's stream stands (after the chunk last yielded)."""
        return ShardResume(
            self._done, self.skipped, dict(self._rng.bit_generator.state), self._sources
        )


@dataclass(frozen=True)
class ShardResume:
    """A point inside a shard's stream: rows made so far, rows skipped, the generator state.

    Stored as JSON in the shard (``gen_resume``) at each commit, so a stopped or killed job
    continues a half-written shard from its committed rows instead of from row 0.
    """

    rows: int
    skipped: int
    rng_state: dict[str, Any]
    sources: int = 0  # source samples drawn so far (they number the rows' groups)

    def to_json(self) -> str:
        return json.dumps(
            {
                "rows": self.rows,
                "skipped": self.skipped,
                "rng": self.rng_state,
                "sources": self.sources,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ShardResume | None:
        """The point stored in ``text``; None when it is not one (then the shard restarts)."""
        try:
            d = json.loads(text)
            return cls(int(d["rows"]), int(d["skipped"]), dict(d["rng"]), int(d.get("sources", 0)))
        except (ValueError, KeyError, TypeError):
            return None
