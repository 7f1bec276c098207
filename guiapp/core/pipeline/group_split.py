"""Splits that keep groups whole: train/val/test, k folds and data fractions by group.

When a dataset's rows carry groups (``store/columns.py``), every split takes whole groups,
stratified by class as far as the groups allow (the idea of scikit-learn's
``StratifiedGroupKFold``, computed in a few vectorised passes):

1. each group gets its class (the majority label of its rows) and a seeded hash;
2. inside each class, groups are ordered by hash and each gets the position of its middle
   row in the class's rows, ``p`` in (0, 1);
3. all groups are ordered by ``p`` (interleaving the classes), and each gets the position
   ``P`` of its middle row among all rows.

A split is then a range of ``P``: test is ``P < test``; the other groups, placed again the
same way, are cut into folds (``floor(Q * folds)``) or into validation (``Q < val / (1 -
test)``) and training. Every split holds about its share of every class, and split sizes
differ from their targets by at most one group's rows at each end. A data fraction keeps
the training groups whose position in a second seeded order is below the fraction.

The result is a boolean mask per row that ``ReadPlan`` reads through: blocks stay the unit
of reading; a block holds the rows of its split that the mask selects.

A dataset written in the packed layout (``generate/packing.py``: rows of a group never
cross a multiple of ``group_blocks`` rows) is split by *atoms* instead: runs of whole units
that no group crosses (``unit_atoms``), placed by the same steps as groups. Every block of
such a split is then whole (selected entirely or not at all), so ``ReadPlan`` reads it like
a split by blocks; the split still keeps every group whole. Atoms are used when there are
at least :data:`MIN_ATOMS` of them; smaller datasets are split group by group.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .read_plan import SplitSpec, block_uniform

SPLIT_BY = ("groups", "rows")
#: Above this many groups x classes, a group's class is its first row's (not the majority).
MAJORITY_CELLS = 50_000_000
#: A packed dataset is split by atoms (whole units) when it has at least this many.
MIN_ATOMS = 64
#: Rows ``unit_atoms`` looks at per piece.
ATOM_ROWS = 1 << 22


@dataclass
class GroupAssignment:
    """Per group: its id, rows, class and split code (0 train, 1 val, 2 test); per row:
    the index of its group."""

    ids: np.ndarray
    sizes: np.ndarray
    classes: np.ndarray
    codes: np.ndarray
    row_group: np.ndarray
    seed: int
    #: Split by atoms (``unit_atoms``): per group its atom, and the atoms' rows and classes.
    atom_of: np.ndarray | None = None
    atom_sizes: np.ndarray | None = None
    atom_classes: np.ndarray | None = None

    @property
    def by_atoms(self) -> bool:
        return self.atom_of is not None

    def row_codes(self) -> np.ndarray:
        return np.asarray(self.codes[self.row_group])

    def fraction_keep(self, fraction: float) -> np.ndarray:
        """Per group: kept in a data fraction of the training groups (all others: True)."""
        keep = np.ones(len(self.ids), bool)
        if fraction >= 1.0:
            return keep
        train = self.codes == 0
        if self.atom_of is not None:
            assert self.atom_sizes is not None and self.atom_classes is not None
            n = len(self.atom_sizes)
            atom_train = np.zeros(n, bool)
            atom_train[self.atom_of[train]] = True
            kept_atoms = _fraction(
                self.atom_sizes, self.atom_classes, np.arange(n), atom_train, self.seed, fraction
            )
            keep[train] = kept_atoms[self.atom_of[train]]
            return keep
        kept = _fraction(self.sizes, self.classes, self.ids, train, self.seed, fraction)
        keep[train] = kept[train]
        return keep

    def mask(self, split: str, fraction: float = 1.0) -> np.ndarray:
        """The rows of ``split`` (``train`` with its data fraction), per row."""
        code = {"train": 0, "val": 1, "test": 2}[split]
        sel = self.codes == code
        if split == "train":
            sel &= self.fraction_keep(fraction)
        return np.asarray(sel[self.row_group])

    def summary(self, fraction: float = 1.0) -> dict[str, Any]:
        """Groups and rows per split (train after its fraction)."""
        out: dict[str, Any] = {"groups": {}, "rows": {}}
        keep = self.fraction_keep(fraction)
        for name, code in (("train", 0), ("val", 1), ("test", 2)):
            sel = self.codes == code
            if name == "train":
                sel &= keep
            out["groups"][name] = int(np.count_nonzero(sel))
            out["rows"][name] = int(self.sizes[sel].sum())
        return out


def _fraction(
    sizes: np.ndarray,
    classes: np.ndarray,
    ids: np.ndarray,
    train: np.ndarray,
    seed: int,
    fraction: float,
) -> np.ndarray:
    """Per unit (group or atom) of ``train``: kept in the data fraction (at least one)."""
    h = block_uniform(ids, seed, 4)
    q = _positions(sizes, classes, h, train)
    kept = q < fraction
    if train.any() and not kept[train].any():
        kept[np.flatnonzero(train)[np.argmin(q[train])]] = True
    return np.asarray(kept)


def _positions(
    sizes: np.ndarray, classes: np.ndarray, h: np.ndarray, subset: np.ndarray
) -> np.ndarray:
    """Per group of ``subset``: the position of its middle row in a class-interleaved order
    of the subset's rows, in (0, 1) (others: 2.0)."""
    out = np.full(len(sizes), 2.0)
    idx = np.flatnonzero(subset)
    if not len(idx):
        return out
    s = sizes[idx].astype(np.float64)
    c = classes[idx]
    order = np.lexsort((h[idx], c))  # by class, then by hash
    s_o, c_o = s[order], c[order]
    total = np.bincount(c_o, weights=s_o, minlength=int(c_o.max()) + 1)
    first = np.concatenate([[0.0], np.cumsum(total)])[:-1]
    within = np.cumsum(s_o) - s_o - first[c_o]
    p = np.empty(len(idx))
    p[order] = (within + s_o / 2) / np.maximum(total[c_o], 1)
    order2 = np.lexsort((h[idx], p))  # classes interleaved by their within-class position
    s2 = s[order2]
    q = np.empty(len(idx))
    q[order2] = (np.cumsum(s2) - s2 / 2) / s.sum()
    out[idx] = q
    return out


def _codes(sizes: np.ndarray, classes: np.ndarray, h: np.ndarray, splits: SplitSpec) -> np.ndarray:
    """Per unit (group or atom): its split code, 0 train, 1 val, 2 test."""
    everyone = np.ones(len(sizes), bool)
    pos = _positions(sizes, classes, h, everyone)
    codes = np.zeros(len(sizes), np.int8)
    test = pos < splits.test
    codes[test] = 2
    rest = ~test
    q = _positions(sizes, classes, h, rest)
    if splits.folds:
        fold = np.minimum(np.floor(q * splits.folds), splits.folds - 1)
        codes[rest & (fold == splits.fold)] = 1
    elif splits.val > 0:
        codes[rest & (q < splits.val / (1.0 - splits.test))] = 1
    return codes


def unit_atoms(row_group: np.ndarray, first_row: np.ndarray, unit: int) -> np.ndarray:
    """Per group, its atom: atoms are runs of units of ``unit`` rows (a unit: rows
    ``[u * unit, (u + 1) * unit)``) that no group crosses, numbered from 0 in row order.

    ``first_row`` is each group's first row. A group whose rows all lie in its first row's
    unit joins nothing; a group reaching further joins every unit up to its last row's.
    """
    n = len(row_group)
    units = -(-n // unit) if n else 0
    first_unit = first_row // unit
    last_unit = first_unit.copy()
    for a in range(0, n, ATOM_ROWS):  # a piece at a time: no temporaries the split's size
        rows = np.arange(a, min(n, a + ATOM_ROWS), dtype=np.int64)
        g = row_group[a : a + len(rows)]
        away = np.flatnonzero(rows // unit != first_unit[g])  # rows outside their unit
        np.maximum.at(last_unit, g[away], rows[away] // unit)
    span = np.flatnonzero(last_unit > first_unit)
    cover = np.zeros(units + 1, np.int64)
    np.add.at(cover, first_unit[span] + 1, 1)
    np.add.at(cover, last_unit[span] + 1, -1)
    joined = np.cumsum(cover)[:units] > 0  # unit u belongs to unit u - 1's atom
    atom_of_unit = np.cumsum(~joined) - 1
    return np.asarray(atom_of_unit[first_unit])


def assign_groups(
    groups: np.ndarray, labels: np.ndarray, splits: SplitSpec, unit: int = 0
) -> GroupAssignment:
    """Each group's split (for ``splits.fold`` of ``splits.folds``), whole groups only;
    by atoms of units of ``unit`` rows when the rows are packed so (``unit_atoms``) and
    there are at least :data:`MIN_ATOMS` atoms."""
    ids, first, row_group, sizes = np.unique(
        groups, return_index=True, return_inverse=True, return_counts=True
    )
    row_group = row_group.reshape(-1)
    labels = np.asarray(labels, np.int64)
    k = int(labels.max()) + 1 if len(labels) else 1
    if len(ids) * k <= MAJORITY_CELLS:
        counts = np.bincount(row_group * k + labels, minlength=len(ids) * k).reshape(-1, k)
        classes = counts.argmax(axis=1)
    else:
        classes = np.zeros(len(ids), np.int64)
        classes[row_group[::-1]] = labels[::-1]  # the first row's label wins
    atoms = unit_atoms(row_group, first, unit) if unit and len(groups) else None
    if atoms is not None and int(atoms.max()) + 1 >= MIN_ATOMS:
        n = int(atoms.max()) + 1
        atom_sizes = np.bincount(atoms, weights=sizes, minlength=n).astype(np.int64)
        row_atom = atoms[row_group]
        per = np.bincount(row_atom * k + labels, minlength=n * k).reshape(-1, k)
        atom_classes = per.argmax(axis=1)
        h = block_uniform(np.arange(n, dtype=np.int64), splits.seed, 3)
        codes = _codes(atom_sizes, atom_classes, h, splits)[atoms]
        return GroupAssignment(
            ids, sizes, classes, codes, row_group, splits.seed, atoms, atom_sizes, atom_classes
        )
    h = block_uniform(ids, splits.seed, 3)
    codes = _codes(sizes, classes, h, splits)
    return GroupAssignment(ids, sizes, classes, codes, row_group, splits.seed)


# -- one assignment per dataset and splits, shared by the train and val pipelines -------------
_CACHE: OrderedDict[tuple[Any, ...], GroupAssignment] = OrderedDict()
_LOCK = threading.Lock()


def dataset_assignment(ds: Any, splits: SplitSpec) -> GroupAssignment | None:
    """The group assignment of an open ``Dataset`` (None when its rows have no groups)."""
    from ..store.columns import read_groups

    if not ds.has_groups:
        return None
    key = (str(ds.path), ds.uuid, len(ds), splits)
    with _LOCK:
        got = _CACHE.get(key)
    if got is None:
        groups = read_groups(ds)
        assert groups is not None
        got = assign_groups(groups, ds.read_labels(), splits, ds.group_blocks)
        with _LOCK:
            _CACHE[key] = got
            while len(_CACHE) > 4:
                _CACHE.popitem(last=False)
    return got


def split_mask(
    ds: Any, splits: SplitSpec, split: str, *, fraction: float = 1.0, split_by: str = "groups"
) -> np.ndarray | None:
    """The rows of ``split`` as a mask when the split goes by groups; None when it goes by
    blocks (``split_by="rows"``, a dataset without groups, or ``split="all"``)."""
    if split == "all" or split_by == "rows":
        return None
    got = dataset_assignment(ds, splits)
    return None if got is None else got.mask(split, fraction)


def describe_split(
    ds: Any,
    splits: SplitSpec,
    *,
    fraction: float = 1.0,
    split_by: str = "groups",
    block_rows: int | None = None,
) -> dict[str, Any]:
    """How a run splits its dataset, for its config and for the user: ``by`` (groups or
    rows), the rows of each split (train after its fraction; by rows only with
    ``block_rows``, the run's) and with groups the groups of each."""
    got = dataset_assignment(ds, splits) if split_by == "groups" else None
    out: dict[str, Any]
    if got is not None:
        out = {"by": "groups", "total_groups": int(len(got.ids)), **got.summary(fraction)}
        if got.atom_sizes is not None:  # whole units of packed rows (``unit_atoms``)
            out["atoms"] = int(len(got.atom_sizes))
        return out
    if split_by == "rows":
        out = {"by": "rows", "note": "rows: groups may cross splits"}
    else:
        out = {"by": "rows", "note": "the dataset has no groups: each row is its own group"}
    if block_rows:
        out["rows"] = row_split_sizes(len(ds), splits, block_rows, fraction)
    return out


def row_split_sizes(
    rows: int, splits: SplitSpec, block_rows: int, fraction: float = 1.0
) -> dict[str, int]:
    """Rows of each split when blocks of ``block_rows`` rows are split (train after its
    ``fraction``)."""
    from .read_plan import ReadPlan

    out = {}
    for name in ("train", "val", "test"):
        plan = ReadPlan(
            rows=max(1, rows), batch_size=1, block_rows=block_rows, split=name,
            splits=splits, fraction=fraction if name == "train" else 1.0,
        )  # fmt: skip
        out[name] = int(plan.block_lengths(plan.selected_blocks()).sum()) if rows else 0
    return out
