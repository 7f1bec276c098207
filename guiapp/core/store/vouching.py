"""Vouching for a dataset's sealed shards when it opens: each is this dataset's, is there,
is long enough and holds its rows where the manifest says, from two small reads and no
rows (``shard_meta.vouch_shard``), remembered for the process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import DatasetError
from .format import shard_dir
from .shard_meta import confirm_shard, vouch_shard

if TYPE_CHECKING:
    from .dataset import Dataset

#: Sealed shards vouched for in this process: hash of (file, what the manifest says of it)
#: -> hash of the file's (inode, size, mtime) then (two ints: ~100 bytes a shard). A
#: dataset opened again (the GUI does, often) costs one ``stat`` a shard; a file replaced,
#: truncated or written to since is read again.
_VOUCHED: dict[int, int] = {}
VOUCHED_MAX = 1 << 17


def check_listed(ds: Dataset) -> None:
    """Every shard the manifest vouches for (sealed or finished) is this dataset's, is
    there, is long enough and holds its rows where the manifest says: two small reads
    per shard, no rows (``vouch_shard``); HDF5 is asked only about a shard those bytes
    do not confirm, and says which part is damaged (``confirm_shard``). Unsealed shards
    were read from their files by ``_open_entries``."""
    rec = ds._table.rec
    row_bytes = ds.row_nbytes
    skip = ds._shard_list.from_files
    folder = str(ds._folder / shard_dir(ds.path).name)  # (pathlib per shard: 10x)
    uuid = ds.uuid.encode("ascii")
    for k, (number, cap, committed, xo, yo, sealed_as) in enumerate(
        zip(
            rec["number"].tolist(),
            rec["capacity"].tolist(),
            rec["committed"].tolist(),
            rec["x_offset"].tolist(),
            rec["y_offset"].tolist(),
            rec["content_hash"].tolist(),
            strict=True,
        )
    ):
        if k in skip or committed == 0:
            continue
        if ds._files is None:
            name = f"{folder}/{number:05d}.h5"
        else:
            name = str(ds._path_of(k, ds._files, number))
        key = hash((name, uuid, xo, yo, cap, row_bytes, sealed_as))
        try:
            st = os.stat(name)
            seen = hash((st.st_ino, st.st_size, st.st_mtime_ns))
            if _VOUCHED.get(key) == seen:
                continue
            ok = vouch_shard(name, uuid, xo, yo, cap, row_bytes, sealed_as.strip())
        except FileNotFoundError:
            raise DatasetError(
                name,
                f"is missing (shard {number} of {ds.path.name})",
                "Restore the shard file or regenerate the dataset",
            ) from None
        except OSError as exc:
            raise DatasetError(
                name, f"cannot be read ({exc.strerror})", "Check the file's permissions"
            ) from None
        if ok:
            if len(_VOUCHED) >= VOUCHED_MAX:
                _VOUCHED.clear()
            _VOUCHED[key] = seen
            continue
        confirm_shard(
            ds.path,
            Path(name),
            number=number,
            uuid=ds.uuid,
            x_offset=None if xo < 0 else xo,
            y_offset=None if yo < 0 else yo,
            capacity=cap,
            committed=committed,
        )
