"""Which rows an epoch reads, in which order: blocks, splits, workers, windows, chunks.

Everything here is arithmetic on block ids (no I/O, no TensorFlow), a pure function of
(dataset length, config, seed, epoch), so any process can recompute any part of any epoch.

- A block is ``block_rows`` consecutive rows of the dataset: block ``b`` holds rows
  ``[b*B, min((b+1)*B, n))``.
- Each block belongs to a split (train/val/test) or a fold by a seeded hash of its id,
  so splits need no index arrays and reads stay contiguous.
- Each epoch permutes the selected blocks with ``(seed, epoch)``; worker ``i`` of ``W`` takes
  every ``W``-th block of that order; consecutive groups of ``window_blocks`` blocks form a
  window.
- Inside a window, blocks are cut into chunks of ``chunk_rows`` rows and the chunks are
  permuted with ``(seed, epoch, worker, window)``; with ``chunk_rows=1`` this is a full row
  shuffle across the window. The window's rows, concatenated in that order, are cut into
  batches; batches run on across windows, so every selected row appears exactly once per
  epoch. The dataset's last block, if short, always comes last in an epoch's order, so the
  windows before it hold whole blocks.
- The reader fetches *segments*: runs of whole batches (about one window), whose rows may
  come from two windows when a window is not a multiple of the batch size.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

SPLITS = ("train", "val", "test", "all")
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """A fast, well-mixed 64-bit hash (vectorised; wraps around as intended)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def block_uniform(block_ids: np.ndarray, seed: int, stream: int = 0) -> np.ndarray:
    """A uniform number in [0, 1) per block id, fixed by (seed, stream)."""
    with np.errstate(over="ignore"):
        key = splitmix64(np.array([seed * 2 + stream], dtype=np.uint64))[0]
        h = splitmix64(block_ids.astype(np.uint64) ^ key)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


#: Windows whose copy plan an ``EpochPlan`` keeps (the reader threads run a few ahead).
WINDOW_RUNS_CACHED = 8


@dataclass(frozen=True)
class SplitSpec:
    """How blocks are assigned to splits. ``folds > 0`` turns ``val`` into fold ``fold``."""

    val: float = 0.1
    test: float = 0.0
    folds: int = 0
    fold: int = 0
    seed: int = 0
    #: Splits, folds and fractions of the sizes asked, to within one block (runs from before
    #: this field drew each block's split by its hash alone: sizes off by several blocks).
    exact: bool = True

    def __post_init__(self) -> None:
        if not (0.0 <= self.val < 1.0 and 0.0 <= self.test < 1.0 and self.val + self.test < 1.0):
            raise ValueError(
                f"split fractions val={self.val} test={self.test} must be >= 0 and sum below 1"
            )
        if self.folds < 0 or self.folds == 1 or (self.folds and not 0 <= self.fold < self.folds):
            raise ValueError(
                f"fold {self.fold} of {self.folds} folds: use folds >= 2 and 0 <= fold < folds"
            )

    def assign(self, block_ids: np.ndarray) -> np.ndarray:
        """Split code per block (``block_ids``: all of the dataset's): 0 train, 1 val, 2 test."""
        if self.exact:
            return self._assign_exact(block_ids)
        u = block_uniform(block_ids, self.seed, 0)
        out = np.zeros(len(block_ids), dtype=np.int8)
        test = u < self.test
        if self.folds:
            fold = np.floor(block_uniform(block_ids, self.seed, 1) * self.folds).astype(np.int64)
            out[fold == self.fold] = 1
        else:
            out[(u >= self.test) & (u < self.test + self.val)] = 1
        out[test] = 2
        return out

    def _assign_exact(self, block_ids: np.ndarray) -> np.ndarray:
        """As many blocks per split as asked (rounded): the blocks ranked by their hash, the
        first ``round(test * n)`` the test split, then the validation split's (or the folds,
        as equal as whole blocks allow, over the rest)."""
        n = len(block_ids)
        out = np.zeros(n, dtype=np.int8)
        order = np.argsort(block_uniform(block_ids, self.seed, 0), kind="stable")
        n_test = _blocks(self.test, n, n - 1)  # (a split asked for is never empty, and
        rest = order[n_test:]  # training keeps a block)
        if self.folds:
            rest = rest[np.argsort(block_uniform(block_ids[rest], self.seed, 1), kind="stable")]
            fold = np.arange(len(rest)) * self.folds // max(1, len(rest))
            out[rest[fold == self.fold]] = 1
        else:
            out[rest[: _blocks(self.val, n, len(rest) - 1)]] = 1
        out[order[:n_test]] = 2
        return out

    def keep_fraction(self, ids: np.ndarray, fraction: float) -> np.ndarray:
        """The ``fraction`` of the blocks ``ids`` a data-scaling trial keeps (at least one)."""
        u = block_uniform(ids, self.seed, 2)
        if self.exact:
            keep = np.zeros(len(ids), dtype=bool)
            keep[np.argsort(u, kind="stable")[: max(1, round(fraction * len(ids)))]] = True
            return keep
        keep = u < fraction
        if not keep.any() and len(ids):
            keep[np.argmin(u)] = True
        return keep


def _blocks(fraction: float, n: int, most: int) -> int:
    """Blocks of ``n`` for a split of ``fraction``: rounded, at least one when asked for,
    at most ``most``."""
    if fraction <= 0 or most <= 0:
        return 0
    return min(most, max(1, round(fraction * n)))


@dataclass(frozen=True)
class ReadPlan:
    """The geometry of reading one dataset: fixed for a whole training run."""

    rows: int  # rows in the dataset
    batch_size: int
    block_rows: int = 1024
    window_blocks: int = 16
    chunk_rows: int = 32
    seed: int = 0
    split: str = "all"
    splits: SplitSpec = SplitSpec()
    worker: int = 0
    workers: int = 1
    shuffle: bool = True
    drop_remainder: bool = False
    #: Use only this fraction of the split's blocks (a data-scaling curve), chosen by hash.
    fraction: float = 1.0
    #: The rows to read, one bool per dataset row, when the split goes by groups
    #: (``group_split.split_mask``): it replaces ``split``/``splits``/``fraction``'s choice
    #: of blocks, and a block then holds only its selected rows.
    row_mask: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction <= 1.0:
            raise ValueError(f"fraction must be in (0, 1], got {self.fraction}")
        for name in ("batch_size", "block_rows", "window_blocks", "chunk_rows", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} is not one of {', '.join(SPLITS)}")
        if not 0 <= self.worker < self.workers:
            raise ValueError(f"worker {self.worker} is not in 0..{self.workers - 1}")
        if self.row_mask is not None and len(self.row_mask) != self.rows:
            raise ValueError(f"row_mask holds {len(self.row_mask)} rows, the plan {self.rows}")

    # -- blocks ------------------------------------------------------------------------
    @property
    def num_blocks(self) -> int:
        return -(-self.rows // self.block_rows)

    @cached_property
    def _mask_counts(self) -> np.ndarray:
        """Selected rows per block (with a row mask)."""
        assert self.row_mask is not None
        if not self.rows:
            return np.zeros(0, np.int64)
        starts = np.arange(0, self.rows, self.block_rows)
        return np.add.reduceat(self.row_mask.astype(np.int64), starts)

    @cached_property
    def whole_blocks(self) -> bool:
        """With a row mask: every block is selected whole or not at all (a grouped split of
        packed rows, ``group_split.unit_atoms``), so windows are planned as without one."""
        if self.row_mask is None:
            return True
        full = np.minimum(self.block_rows, self.rows - np.arange(0, self.rows, self.block_rows))
        counts = self._mask_counts
        return bool(np.all((counts == 0) | (counts == full)))

    def block_lengths(self, blocks: np.ndarray) -> np.ndarray:
        """Rows each block gives this plan (its selected rows, with a row mask)."""
        if self.row_mask is not None:
            return self._mask_counts[blocks.astype(np.int64)]
        start = blocks.astype(np.int64) * self.block_rows
        return np.minimum(self.block_rows, self.rows - start)

    def selected_rows(self) -> np.ndarray:
        """The dataset rows of this plan's split (all workers), in dataset order."""
        if self.row_mask is not None:
            return np.flatnonzero(self.row_mask).astype(np.int64)
        if self.split == "all" and self.fraction >= 1.0:
            return np.arange(self.rows, dtype=np.int64)
        blocks = self.selected_blocks()
        if not len(blocks):
            return np.zeros(0, np.int64)
        starts = blocks.astype(np.int64) * self.block_rows
        lengths = self.block_lengths(blocks)
        return np.concatenate(
            [np.arange(a, a + n, dtype=np.int64) for a, n in zip(starts, lengths, strict=True)]
        )

    def selected_blocks(self) -> np.ndarray:
        """Block ids of this plan's split (all workers), in id order."""
        if self.row_mask is not None:
            return np.flatnonzero(self._mask_counts).astype(np.int64)
        ids = np.arange(self.num_blocks, dtype=np.int64)
        if self.split != "all":
            code = {"train": 0, "val": 1, "test": 2}[self.split]
            ids = ids[self.splits.assign(ids) == code]
        if self.fraction < 1.0:
            ids = ids[self.splits.keep_fraction(ids, self.fraction)]
        return ids

    def epoch_blocks(self, epoch: int) -> np.ndarray:
        """This worker's blocks in this epoch's order."""
        ids = self.selected_blocks()
        if self.shuffle:
            ids = np.random.default_rng([self.seed, epoch, 0x51]).permutation(ids)
            # The dataset's last block may be short: it goes last, so that every window
            # before it holds whole blocks and batches never straddle two windows.
            if self.rows % self.block_rows:
                short = ids == self.num_blocks - 1
                ids = np.concatenate([ids[~short], ids[short]])
        return ids[self.worker :: self.workers]

    # -- windows -----------------------------------------------------------------------
    def epoch(self, epoch: int) -> EpochPlan:
        return EpochPlan(self, epoch)


class EpochPlan:
    """One worker's epoch: windows of blocks, their sizes, and where each batch starts."""

    def __init__(self, plan: ReadPlan, epoch: int) -> None:
        self.plan = plan
        self.epoch = epoch
        self.blocks = plan.epoch_blocks(epoch)
        self.lengths = plan.block_lengths(self.blocks)
        k = plan.window_blocks
        self.num_windows = -(-len(self.blocks) // k)
        sizes = (
            np.add.reduceat(self.lengths, np.arange(0, len(self.blocks), k))
            if len(self.blocks)
            else np.zeros(0, np.int64)
        )
        self.window_starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.rows = int(self.window_starts[-1])
        # The runs of the last few windows: a window that straddles two segments is asked
        # for by both (and by every segment shorter than it). Kept read-only: shared.
        self._runs: OrderedDict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
        self._runs_lock = threading.Lock()

    @property
    def num_batches(self) -> int:
        bs = self.plan.batch_size
        return self.rows // bs if self.plan.drop_remainder else -(-self.rows // bs)

    @property
    def rows_used(self) -> int:
        """Rows the batches of this epoch hold (fewer with drop_remainder)."""
        return self.num_batches * self.plan.batch_size if self.plan.drop_remainder else self.rows

    def window_blocks(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        k = self.plan.window_blocks
        return self.blocks[w * k : (w + 1) * k], self.lengths[w * k : (w + 1) * k]

    def window_runs(self, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The copy plan of window ``w``: runs of rows ``(src_row, dest_row, length)``.

        ``src_row`` is a dataset row, ``dest_row`` a row of the window's buffer. Runs are
        sorted by source row, so each block is one contiguous read scattered to its chunks.
        """
        with self._runs_lock:
            got = self._runs.get(w)
        if got is None:
            got = self._window_runs(w)
            for a in got:
                a.flags.writeable = False
            with self._runs_lock:
                self._runs[w] = got
                while len(self._runs) > WINDOW_RUNS_CACHED:
                    self._runs.popitem(last=False)
        return got

    def _window_runs(self, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.plan.whole_blocks:
            return self._masked_window_runs(w)
        blocks, lengths = self.window_blocks(w)
        c = self.plan.chunk_rows
        per_block = -(-lengths // c)
        owner = np.repeat(np.arange(len(blocks)), per_block)
        first = np.concatenate([[0], np.cumsum(per_block)])[:-1]
        index_in_block = np.arange(len(owner)) - np.repeat(first, per_block)
        src = blocks[owner].astype(np.int64) * self.plan.block_rows + index_in_block * c
        length = np.minimum(c, lengths[owner] - index_in_block * c)
        if self.plan.shuffle:
            rng = np.random.default_rng([self.plan.seed, self.epoch, self.plan.worker, w, 0xC4])
            order = rng.permutation(len(src))
        else:
            order = np.arange(len(src))
        dest = np.empty(len(src), dtype=np.int64)
        dest[order] = np.concatenate([[0], np.cumsum(length[order])])[:-1]
        by_src = np.argsort(src, kind="stable")
        return src[by_src], dest[by_src], length[by_src]

    def _masked_window_runs(
        self, w: int, compiled: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``_window_runs`` where blocks hold only their selected rows: chunks of ``chunk_rows``
        selected rows of a block (the same chunk shuffle), then runs of rows contiguous in
        both the dataset and the buffer (``jitruns.masked_runs`` where numba is, with the
        same result as the numpy below)."""
        plan = self.plan
        assert plan.row_mask is not None
        blocks, lengths = self.window_blocks(w)
        c, b = plan.chunk_rows, plan.block_rows
        nchunks = int((-(-lengths // c)).sum())
        if plan.shuffle:
            rng = np.random.default_rng([plan.seed, self.epoch, plan.worker, w, 0xC4])
            order = rng.permutation(nchunks)
        else:
            order = np.arange(nchunks)
        from .. import jit

        if compiled and jit.available():
            from .jitruns import masked_runs

            got: tuple[np.ndarray, np.ndarray, np.ndarray] = masked_runs(
                blocks.astype(np.int64), lengths.astype(np.int64), plan.row_mask, b,
                plan.rows, c, order,
            )  # fmt: skip
            return got
        parts = []
        for blk in blocks.tolist():
            a = blk * b
            parts.append(np.flatnonzero(plan.row_mask[a : min(a + b, plan.rows)]) + a)
        src_rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        first = np.concatenate([[0], np.cumsum(lengths)])[:-1]
        index_in_block = np.arange(len(src_rows)) - np.repeat(first, lengths)
        per_block = -(-lengths // c)
        chunk_first = np.concatenate([[0], np.cumsum(per_block)])[:-1]
        chunk = np.repeat(chunk_first, lengths) + index_in_block // c
        chunk_len = np.bincount(chunk, minlength=nchunks)
        chunk_dest = np.empty(nchunks, dtype=np.int64)
        chunk_dest[order] = np.concatenate([[0], np.cumsum(chunk_len[order])])[:-1]
        dest = chunk_dest[chunk] + index_in_block % c
        # Rows in source order: the blocks by id, each block's rows already in order.
        bo = np.argsort(blocks, kind="stable")
        lens = lengths[bo]
        by_src = np.repeat(first[bo] - np.concatenate([[0], np.cumsum(lens)])[:-1], lens)
        by_src += np.arange(len(src_rows))
        s, d = src_rows[by_src].astype(np.int64), dest[by_src]
        brk = np.ones(len(s), bool)
        brk[1:] = (np.diff(s) != 1) | (np.diff(d) != 1)
        at = np.flatnonzero(brk)
        return s[at], d[at], np.diff(np.append(at, len(s))).astype(np.int64)

    def segment_runs(self, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The copy plan of batches ``[b0, b1)``: runs ``(src_row, dest_row, length)``.

        ``dest_row`` counts from the first row of batch ``b0``, so the segment's buffer
        holds its batches back to back (batch ``j`` is rows ``[j*B, (j+1)*B)``). A segment
        may take rows from several windows; the rows are exactly those the uninterrupted
        epoch would put in these batches.
        """
        bs = self.plan.batch_size
        p0 = min(b0 * bs, self.rows_used)
        p1 = min(b1 * bs, self.rows_used)
        if p1 <= p0:
            z = np.zeros(0, np.int64)
            return z, z, z
        w_first = int(np.searchsorted(self.window_starts, p0, side="right")) - 1
        w_last = int(np.searchsorted(self.window_starts, p1 - 1, side="right")) - 1
        if (
            w_first == w_last
            and p0 == self.window_starts[w_first]
            and p1 == self.window_starts[w_first + 1]
        ):
            return self.window_runs(w_first)  # the common case: a segment is one window
        parts = []
        for w in range(w_first, w_last + 1):
            src, dest, length = self.window_runs(w)
            g = dest + self.window_starts[w]  # global position of each run
            lo = np.maximum(g, p0)
            hi = np.minimum(g + length, p1)
            keep = hi > lo
            parts.append((src[keep] + (lo - g)[keep], lo[keep] - p0, (hi - lo)[keep]))
        if len(parts) == 1:
            return parts[0]
        src, dest, length = (np.concatenate(a) for a in zip(*parts, strict=True))
        return src, dest, length
