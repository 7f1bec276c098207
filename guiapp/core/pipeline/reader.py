"""``WindowReader``: fill a window's buffers with the rows an ``EpochPlan`` asks for.

Fast path (uncompressed shards, POSIX): one ``os.preadv`` per block scatters its bytes
straight into the shuffled positions of the window buffer: one copy from the page cache,
no h5py, no global lock, the GIL released while the kernel copies, so several threads read
at once. Other shards (compressed, or a platform without ``preadv``) go through the
dataset's arrays (memmap or h5py) and a numpy scatter.

Window buffers are 64-byte aligned, so TensorFlow adopts them without a copy, and they
come from a small pool that reuses a buffer once nothing else refers to it (so steady
state touches no fresh pages).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..store import Dataset
from ..store.format import LABEL_DTYPE

if TYPE_CHECKING:
    from .cache import RowCache

IOV_MAX = 1024
#: Gaps between runs of at most this many bytes are read (into scratch) rather than skipped.
GAP_BYTES = 1 << 16
HAVE_PREADV = hasattr(os, "preadv")
ALIGN = 64


class AlignedPool:
    """Aligned byte buffers, reused once no array refers to them any more.

    ``take`` hands out a new view of a pooled buffer; while that view (or anything derived
    from it, such as a TensorFlow tensor adopting it) is alive, the buffer is busy.
    """

    def __init__(self, max_buffers: int = 8) -> None:
        self.max_buffers = max_buffers
        self._buffers: dict[int, list[tuple[np.ndarray, int]]] = {}
        self._lock = threading.Lock()
        self.allocated_bytes = 0

    def take(self, nbytes: int) -> np.ndarray:
        with self._lock:
            entries = self._buffers.setdefault(nbytes, [])
            for raw, off in entries:
                # Free: referenced only by the pool's tuple, this loop and getrefcount.
                if sys.getrefcount(raw) <= 3:
                    return raw[off : off + nbytes]
            raw = np.empty(nbytes + ALIGN, np.uint8)
            off = (-raw.ctypes.data) % ALIGN
            if len(entries) < self.max_buffers:
                entries.append((raw, off))
                self.allocated_bytes += nbytes + ALIGN
            return raw[off : off + nbytes]

    def touch(self, nbytes: int, count: int) -> None:
        """Fill the pool up to ``count`` buffers of ``nbytes``, their pages written once: a
        fresh page is first touched at 0.4-0.6 GiB/s here, so a first pass through new
        buffers costs the reads that get them (``BatchPipeline.start_reading``)."""
        count = min(count, self.max_buffers)
        with self._lock:
            entries = self._buffers.setdefault(nbytes, [])
            new = [np.empty(nbytes + ALIGN, np.uint8) for _ in range(count - len(entries))]
        for raw in new:
            raw[:] = 0  # (without the GIL; ``fill`` kept it and ran at a fifth of the speed)
        with self._lock:
            entries = self._buffers.setdefault(nbytes, [])
            for raw in new[: max(0, count - len(entries))]:
                entries.append((raw, (-raw.ctypes.data) % ALIGN))
                self.allocated_bytes += nbytes + ALIGN


class WindowReader:
    """Reads runs of rows of one dataset into window buffers."""

    def __init__(
        self,
        dataset: Dataset,
        *,
        use_pread: bool | None = None,
        pool_buffers: int = 8,
        cache: RowCache | None = None,
        compiled: bool = True,
    ) -> None:
        """``cache``: copy rows from memory instead of the files (``cache.py``);
        ``compiled``: load the compiled reads (numba) where they are there; a reader of a
        few long runs (the cache's load) does as well without them."""
        self.ds = dataset
        self.cache = cache
        self.row_bytes = dataset.row_nbytes
        self.sample_shape = dataset.sample_shape
        self.dtype = dataset.dtype
        self.starts = dataset.starts
        raw_ok = all(s.x_offset is not None or s.committed == 0 for s in dataset.shards)
        self.use_pread = (
            HAVE_PREADV and raw_ok if use_pread is None else (use_pread and HAVE_PREADV and raw_ok)
        )
        self.use_mmap = raw_ok and not self.use_pread
        #: Per open shard: its descriptor and the byte offsets of x and y (a shard's
        #: ``ShardMeta`` is built anew on every ``ds.shards[k]``: ~90 us, a third of the
        #: cost of reading a block of short rows, so it is looked up once per shard).
        self._fds: dict[int, tuple[int, int, int]] = {}
        self._fd_lock = threading.Lock()
        self._arrays_lock = threading.Lock()  # h5py-backed shards: one reader at a time
        self.pool = AlignedPool(pool_buffers)
        self._local = threading.local()
        self.compiled = compiled and cache is None
        if self.use_pread and self.compiled:
            _jitread()

    def _fd(self, k: int) -> tuple[int, int, int]:
        """``(descriptor, x byte offset, y byte offset)`` of shard ``k`` (opened once)."""
        got = self._fds.get(k)
        if got is None:
            with self._fd_lock:
                got = self._fds.get(k)
                if got is None:
                    meta = self.ds.shards[k]
                    assert meta.x_offset is not None and meta.y_offset is not None
                    fd = os.open(meta.path, os.O_RDONLY)
                    got = self._fds[k] = (fd, meta.x_offset, meta.y_offset)
        return got

    def close(self) -> None:
        with self._fd_lock:
            for fd, _, _ in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def buffers(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Fresh-or-reused aligned ``(x, y)`` arrays for ``rows`` rows."""
        xb = self.pool.take(rows * self.row_bytes)
        yb = self.pool.take(rows * LABEL_DTYPE.itemsize)
        return xb.view(self.dtype).reshape((rows, *self.sample_shape)), yb.view(LABEL_DTYPE)

    def read_runs(
        self, src: np.ndarray, dest: np.ndarray, length: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> None:
        """Copy dataset rows ``src[i]:src[i]+length[i]`` to buffer rows ``dest[i]:...``."""
        if self.cache is not None:
            self.cache.copy_runs(src, dest, length, x, y)
            return
        src, dest, length = _split_at_shards(src, dest, length, self.starts)
        shard = np.searchsorted(self.starts, src, side="right") - 1
        if self.use_pread and self.compiled and _jitread() is not None:
            # Small gaps between runs (rows of other splits, with a grouped split) are read
            # into a scratch buffer, so a block stays one read: a copy of a few rows costs
            # less than a system call per run.
            from .jitruns import fill_gaps

            filled = fill_gaps(src, dest, length, shard, self.row_bytes, GAP_BYTES)
            junk = filled[4] if filled[4].any() else None
            if self._compiled(*filled[:4], junk, x, y):
                return
        # Groups of runs that are contiguous in the source and in one shard: one read each.
        bounds = _group_bounds(src, length, shard)
        if self.use_pread:
            self._preadv_groups(src, dest, length, shard, bounds, x, y)
            return
        for g in range(len(bounds) - 1):
            a, b = int(bounds[g]), int(bounds[g + 1])
            k = int(shard[a])
            local = int(src[a] - self.starts[k])
            if self.use_mmap:
                self._copy_mmap(k, local, src[a:b] - src[a], dest[a:b], length[a:b], x, y)
            else:
                self._copy_arrays(k, local, dest[a:b], length[a:b], x, y)

    def _preadv_groups(
        self,
        src: np.ndarray,
        dest: np.ndarray,
        length: np.ndarray,
        shard: np.ndarray,
        bounds: np.ndarray,
        x: np.ndarray,
        y: np.ndarray,
    ) -> None:
        """One ``preadv`` of x and one of y per group of runs (at most ``IOV_MAX`` runs).

        The byte offsets of every run are computed for the whole segment at once: per-block
        numpy calls cost more than the copy of a block of short rows.
        """
        rb, lb = self.row_bytes, LABEL_DTYPE.itemsize
        xmv = x.reshape(-1).view(np.uint8).data
        ymv = y.reshape(-1).view(np.uint8).data
        dx, nx = (dest * rb).tolist(), (length * rb).tolist()
        dy, ny = (dest * lb).tolist(), (length * lb).tolist()
        # Every run's two views at once: per-group Python costs more than the copy of a
        # group of short rows.
        xiov = [xmv[p : p + m] for p, m in zip(dx, nx, strict=True)]
        yiov = [ymv[p : p + m] for p, m in zip(dy, ny, strict=True)]
        srcs, shards = src.tolist(), shard.tolist()
        edges = bounds.tolist()
        for g in range(len(edges) - 1):
            k = shards[edges[g]]
            fd, x_offset, y_offset = self._fd(k)
            start = int(self.starts[k])  # (a list of all starts would cost O(shards))
            for s in range(edges[g], edges[g + 1], IOV_MAX):
                e = min(edges[g + 1], s + IOV_MAX)
                row = srcs[s] - start
                for iov, want, off, size in (
                    (xiov[s:e], nx[s:e], x_offset, rb),
                    (yiov[s:e], ny[s:e], y_offset, lb),
                ):
                    pos = off + row * size
                    got = os.preadv(fd, iov, pos)
                    if got != sum(want):  # short read: finish it the slow, exact way
                        _finish_short_read(fd, iov, pos, got)
        del xiov, yiov

    def _compiled(
        self,
        src: np.ndarray,
        dest: np.ndarray,
        length: np.ndarray,
        shard: np.ndarray,
        junk: np.ndarray | None,
        x: np.ndarray,
        y: np.ndarray,
    ) -> bool:
        """The reads through ``jitread.read_groups`` (no GIL), runs marked ``junk`` into the
        thread's scratch buffers; False where numba is missing or a read came back short
        (the caller then reads the segment again)."""
        jr = _jitread()
        if jr is None:
            return False
        rb, lb = self.row_bytes, LABEL_DTYPE.itemsize
        bounds = _group_bounds(src, length, shard)
        first = bounds[:-1]
        ks = shard[first].tolist()
        info = [self._fd(k) for k in ks]
        starts = self.starts[shard[first]]
        rows = src[first] - starts
        fds = np.array([i[0] for i in info], np.int64)
        pos_x = np.array([i[1] for i in info], np.int64) + rows * rb
        pos_y = np.array([i[2] for i in info], np.int64) + rows * lb
        dx, dy = dest * rb, dest * lb
        if junk is not None:
            sx, sy = self._scratch()
            dx[junk] = sx.ctypes.data - x.ctypes.data
            dy[junk] = sy.ctypes.data - y.ctypes.data
        got = jr.read_groups(
            fds,
            pos_x,
            pos_y,
            bounds.astype(np.int64),
            x.ctypes.data,
            dx,
            length * rb,
            y.ctypes.data,
            dy,
            length * lb,
            IOV_MAX,
        )
        return bool(got < 0)

    def _scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """This thread's buffers for rows read only to keep a block's read in one piece."""
        got: tuple[np.ndarray, np.ndarray] | None = getattr(self._local, "scratch", None)
        if got is None:
            rows = max(1, GAP_BYTES // self.row_bytes)
            got = (np.empty(rows * self.row_bytes, np.uint8), np.empty(rows, LABEL_DTYPE))
            self._local.scratch = got
        return got

    def _copy_mmap(
        self,
        k: int,
        local: int,
        offs: np.ndarray,
        dest: np.ndarray,
        length: np.ndarray,
        x: np.ndarray,
        y: np.ndarray,
    ) -> None:
        xs, ys = self.ds.shard_arrays(k)
        for o, d, n in zip((offs + local).tolist(), dest.tolist(), length.tolist(), strict=True):
            x[d : d + n] = xs[o : o + n]
            y[d : d + n] = ys[o : o + n]

    def _copy_arrays(
        self, k: int, local: int, dest: np.ndarray, length: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> None:
        total = int(length.sum())
        with self._arrays_lock:
            xs, ys = self.ds.shard_arrays(k)
            xsrc = np.asarray(xs[local : local + total])
            ysrc = np.asarray(ys[local : local + total])
        rows = np.concatenate(
            [np.arange(d, d + n) for d, n in zip(dest.tolist(), length.tolist(), strict=True)]
        )
        x[rows] = xsrc
        y[rows] = ysrc


_JITREAD: Any = None


def _jitread() -> Any:
    """``jitread`` where its kernel is compiled (numba there and on), else None."""
    global _JITREAD
    if _JITREAD is None:
        from .. import jit

        if jit.available():
            from . import jitread, jitruns

            z = np.zeros(0, np.int64)
            # Load the kernels now (numba's import and cache: ~0.3-0.5 s; compiling them in a
            # fresh checkout: seconds), not on the first batch, where a run's input wait
            # would count it: the reads, the gap filling and a grouped window's plan.
            jitread.read_groups(z, z, z, np.zeros(1, np.int64), 0, z, z, 0, z, z, IOV_MAX)
            jitruns.warm()
            _JITREAD = jitread
        else:
            _JITREAD = False
    return _JITREAD or None


def _group_bounds(src: np.ndarray, length: np.ndarray, shard: np.ndarray) -> np.ndarray:
    """Where groups of runs contiguous in the source and in one shard start (and the end)."""
    brk = np.ones(len(src), dtype=bool)
    if len(src) > 1:
        brk[1:] = (src[:-1] + length[:-1] != src[1:]) | (shard[:-1] != shard[1:])
    return np.append(np.flatnonzero(brk), len(src))


def _split_at_shards(
    src: np.ndarray, dest: np.ndarray, length: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut runs that cross a shard boundary into pieces that do not."""
    k = np.searchsorted(starts, src, side="right") - 1
    end = starts[np.minimum(k + 1, len(starts) - 1)]
    cross = src + length > end
    if not cross.any():
        return src, dest, length
    out_s: list[int] = []
    out_d: list[int] = []
    out_n: list[int] = []
    for s, d, n in zip(src.tolist(), dest.tolist(), length.tolist(), strict=True):
        while n > 0:
            kk = int(np.searchsorted(starts, s, side="right")) - 1
            m = min(n, int(starts[kk + 1]) - s)
            out_s.append(s)
            out_d.append(d)
            out_n.append(m)
            s, d, n = s + m, d + m, n - m
    return np.array(out_s, np.int64), np.array(out_d, np.int64), np.array(out_n, np.int64)


def _finish_short_read(fd: int, iov: list[Any], pos: int, got: int) -> None:
    for v in iov:
        size = len(v)
        if got >= size:
            got -= size
            pos += size
            continue
        view = v[got:]
        pos += got
        got = 0
        while len(view):
            n = os.preadv(fd, [view], pos)
            if n <= 0:
                raise OSError(f"unexpected end of file while reading rows (fd {fd}, offset {pos})")
            view = view[n:]
            pos += n
