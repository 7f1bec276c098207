"""The lineage columns of a run of good rows, as they travel from a parse worker through
the job's chunks into the shuffle's buckets (``--group-field``, ``--keep-fields``).

Per row: the group's id (``store.columns.group_id`` of its name); per kept field, the
value's length, whether it is an integer, and the values' bytes one after the other (the
way the buckets store them: no fixed width before pass 2 knows the longest). Beside the
rows, the names of the groups they hold (``names``: ids sorted, and the names packed), so
that the job learns a group's name without a name per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

LENGTH = np.dtype("<i4")


def offsets(lens: np.ndarray) -> np.ndarray:
    """Where each packed value starts, and the end: ``len(lens) + 1`` int64."""
    out = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out


def pack_texts(texts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    lens = np.fromiter(map(len, texts), LENGTH, len(texts))
    return lens, np.frombuffer(b"".join(texts), np.uint8).copy()


def unpack_texts(lens: np.ndarray, data: np.ndarray) -> list[bytes]:
    raw = data.tobytes()
    at = offsets(lens).tolist()
    return [raw[a:b] for a, b in zip(at[:-1], at[1:], strict=True)]


def pack_s(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An ``S`` array packed (its strings end before trailing NULs, as numpy reads them)."""
    n, w = len(a), a.dtype.itemsize
    lens = np.strings.str_len(a).astype(LENGTH) if n else np.zeros(0, LENGTH)
    rows = np.ascontiguousarray(a).view(np.uint8).reshape(n, w)
    return lens, rows[np.arange(w) < lens[:, None]]


@dataclass
class RowCols:
    ids: np.ndarray | None  # int64 per row: the group (None without --group-field)
    lens: list[np.ndarray] = field(default_factory=list)  # per kept field: int32 per row
    data: list[np.ndarray] = field(default_factory=list)  # per kept field: the bytes
    ints: list[np.ndarray] = field(default_factory=list)  # per kept field: bool per row
    #: the names of the groups of the piece(s) the rows come from (a superset of theirs):
    #: ids, the names' lengths and bytes
    names: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        if self.ids is not None:
            return len(self.ids)
        return len(self.lens[0]) if self.lens else 0

    # -- transport (a worker process's answer) ------------------------------------------
    def arrays(self) -> list[np.ndarray]:
        out = [] if self.ids is None or self.names is None else [self.ids, *self.names]
        for lens, data, ints in zip(self.lens, self.data, self.ints, strict=True):
            out += [lens, data, ints]
        return out

    @classmethod
    def from_arrays(cls, a: list[np.ndarray], group: bool) -> RowCols:
        at = 4 if group else 0
        keep = (len(a) - at) // 3
        return cls(
            ids=a[0] if group else None,
            lens=[a[at + 3 * j] for j in range(keep)],
            data=[a[at + 3 * j + 1] for j in range(keep)],
            ints=[a[at + 3 * j + 2].astype(bool, copy=False) for j in range(keep)],
            names=(a[1], a[2], a[3]) if group else None,
        )

    # -- rows --------------------------------------------------------------------------
    def slice(self, a: int, b: int) -> RowCols:
        """Rows ``[a, b)``."""
        lens, data = [], []
        for ln, d in zip(self.lens, self.data, strict=True):
            s = int(ln[:a].sum(dtype=np.int64))
            lens.append(ln[a:b])
            data.append(d[s : s + int(lens[-1].sum(dtype=np.int64))])
        ids = None if self.ids is None else self.ids[a:b]
        return RowCols(ids, lens, data, [v[a:b] for v in self.ints], self.names)

    def take(self, mask: np.ndarray) -> RowCols:
        """The rows where ``mask`` is true."""
        data = [d[np.repeat(mask, ln)] for ln, d in zip(self.lens, self.data, strict=True)]
        ids = None if self.ids is None else self.ids[mask]
        lens = [ln[mask] for ln in self.lens]
        return RowCols(ids, lens, data, [v[mask] for v in self.ints], self.names)

    @classmethod
    def concat(cls, parts: list[RowCols]) -> RowCols:
        if len(parts) == 1:
            return parts[0]
        cat = np.concatenate
        first = parts[0]
        names = None
        if first.names is not None:  # (each part's piece's table; a name may come twice)
            tables = [p.names for p in parts if p.names is not None]
            names = (
                cat([t[0] for t in tables]),
                cat([t[1] for t in tables]),
                cat([t[2] for t in tables]),
            )
        k = range(len(first.lens))
        return RowCols(
            ids=None if first.ids is None else cat([p.ids for p in parts if p.ids is not None]),
            lens=[cat([p.lens[j] for p in parts]) for j in k],
            data=[cat([p.data[j] for p in parts]) for j in k],
            ints=[cat([p.ints[j] for p in parts]) for j in k],
            names=names,
        )

    def name_of(self, gids: list[int]) -> list[bytes]:
        """The names of the groups ``gids`` (each one of these rows')."""
        assert self.names is not None
        tid, tlens, tdata = self.names
        at = offsets(tlens)
        order = np.argsort(tid, kind="stable")
        where = order[np.searchsorted(tid[order], np.asarray(gids, np.int64))].tolist()
        raw = tdata.tobytes()
        return [raw[at[i] : at[i + 1]] for i in where]
