"""``.npy`` payloads: one ``.npy`` plus labels, an ``.npz``, or a folder of ``.npy`` files."""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import UserError
from .sources import ARRAY_CHUNK_BYTES, TEXT_ROWS_PER_CHUNK, Chunk, Source


class NpyStream:
    """Reads a ``.npy`` payload (a file or a ``.npz`` member) row chunk by row chunk."""

    def __init__(self, fh: IO[bytes], name: str) -> None:
        self.fh = fh
        self.name = name
        fmt: Any = np.lib.format
        try:
            version = fmt.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(fh)
            else:
                shape, fortran, dtype = fmt._read_array_header(fh, version)
        except (ValueError, OSError, EOFError) as exc:
            raise UserError(f"{name}: is not a readable .npy array ({exc})") from None
        if dtype.hasobject:
            raise UserError(
                f"{name}: holds Python objects (dtype {dtype}), which only pickle can load and "
                "guiapp never unpickles. Save it as a numeric (or string) array"
            )
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.dtype: np.dtype = np.dtype(dtype)
        self.fortran = bool(fortran) and len(self.shape) > 1
        self.rows = self.shape[0] if self.shape else 1
        self.row_shape = self.shape[1:]
        self.row_bytes = int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize
        self.at = 0
        self._all: np.ndarray | None = None

    def read(self, n: int) -> np.ndarray:
        n = min(n, self.rows - self.at)
        if self.fortran:
            if self._all is None:
                self._all = self._read_bytes(self.rows * self.row_bytes, self.shape, "F")
            out = self._all[self.at : self.at + n]
        else:
            out = self._read_bytes(n * self.row_bytes, (n, *self.row_shape), "C")
        self.at += n
        return out

    def read_sample(self) -> np.ndarray:
        """The whole payload as one sample."""
        count = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        return self._read_bytes(count, self.shape, "F" if self.fortran else "C")

    def _read_bytes(self, count: int, shape: tuple[int, ...], order: str) -> np.ndarray:
        buf = bytearray(count)
        view = memoryview(buf)
        got = 0
        while got < count:
            k = self.fh.readinto(view[got:])  # type: ignore[attr-defined]
            if not k:
                break
            got += k
        if got < count:
            raise UserError(f"{self.name}: is truncated ({got} of {count} bytes of data)")
        return np.frombuffer(buf, dtype=self.dtype).reshape(shape, order=order)  # type: ignore[call-overload,no-any-return]


def open_npy(path: Path) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None


def _array_chunks(
    xs: NpyStream, ys: NpyStream, name: str, total_bytes: int, cs: list[NpyStream] | None = None
) -> Iterator[Chunk]:
    """Chunks of rows from an x stream and a matching label stream (and column streams)."""
    if xs.rows != ys.rows or (len(ys.shape) > 1 and int(np.prod(ys.row_shape)) != 1):
        raise UserError(
            f"{name}: {xs.rows} samples but {ys.name} has shape {ys.shape}; give one label per sample"
        )
    if not xs.shape:
        raise UserError(f"{name}: is a single number, not an array of samples")
    step = max(1, ARRAY_CHUNK_BYTES // max(1, xs.row_bytes))
    a = 0
    while a < xs.rows:
        x = xs.read(step)
        y = ys.read(len(x)).reshape(-1)
        cols = [c.read(len(x)).reshape(-1) for c in cs or []]
        b = a + len(x)
        first = a
        yield Chunk(
            labels=y,
            data=x,
            keys=np.arange(a, b, dtype=np.int64),
            locate=lambda i, first=first: f"{name}:row {first + i}",  # type: ignore[misc]
            bytes_done=int(total_bytes * b / max(1, xs.rows)),
            cols=cols,
        )
        a = b


def check_column_array(s: NpyStream, npz: Path, key: str, x_key: str, rows: int, opt: str) -> None:
    """A lineage array of an ``.npz``: one integer or string per sample."""
    if s.dtype.kind not in "iuSU":
        raise UserError(
            f"{npz}: array {key!r} ({opt}) has dtype {s.dtype}; give integers or strings "
            f"(e.g. {key} = {key}.astype(str) before numpy.savez)",
            option=opt,
            value=key,
        )
    n = s.shape[0] if s.shape else 1
    one_d = len(s.shape) == 1 or (len(s.shape) == 2 and s.shape[1] == 1)
    if not one_d or n != rows:
        raise UserError(
            f"{npz}: array {key!r} ({opt}) has {n:,} values (shape {s.shape}), array "
            f"{x_key!r} has {rows:,} rows. Give one value per sample: a 1-D array as long as "
            f"{x_key!r}, in the same order",
            option=opt,
            value=key,
        )


class NpySource(Source):
    """One ``.npy`` of samples plus ``--labels`` (a ``.npy`` of one label per sample)."""

    format = "npy"

    def __init__(self, src: Path, labels: Path | None) -> None:
        super().__init__()
        if labels is None:
            raise UserError(
                "--format npy needs --labels LABELS.npy (one label per sample)", option="--labels"
            )
        for p in (src, labels):
            if not p.is_file():
                raise UserError(f"{p}: does not exist or is not a file. Check the path")
        self.src, self.labels = src, labels
        self.files = [src, labels]
        self.total_bytes = src.stat().st_size
        with open_npy(src) as fh:
            self.total_rows = NpyStream(fh, src.name).rows

    def chunks(self) -> Iterator[Chunk]:
        with open_npy(self.src) as fx, open_npy(self.labels) as fy:
            xs, ys = NpyStream(fx, self.src.name), NpyStream(fy, self.labels.name)
            yield from _array_chunks(xs, ys, self.src.name, self.total_bytes)


class NpzSource(Source):
    """One ``.npz`` (``numpy.savez`` or ``savez_compressed``) with keys for x and y."""

    format = "npz"

    def __init__(
        self,
        src: Path,
        x_key: str,
        y_key: str,
        fields: list[str] | None = None,
        group: bool = False,
    ) -> None:
        super().__init__()
        if not src.is_file():
            raise UserError(f"{src}: does not exist or is not a file. Check the path")
        self.src, self.x_key, self.y_key = src, x_key, y_key
        self.fields = list(fields or [])  # lineage arrays: the group's first when ``group``
        self.files = [src]
        try:
            with zipfile.ZipFile(src) as z:
                names = z.namelist()
                opts = ["--x-key", "--y-key"] + [
                    "--group-field" if group and i == 0 else "--keep-fields"
                    for i in range(len(self.fields))
                ]
                for key, opt in zip([x_key, y_key, *self.fields], opts, strict=True):
                    if key + ".npy" not in names:
                        keys = ", ".join(n[:-4] for n in names if n.endswith(".npy"))
                        problem = f"has no array {key!r} (it holds: {keys or 'nothing'})"
                        fix = (
                            "Pass --x-key/--y-key"
                            if opt in opts[:2]
                            else f"Pass {opt} with one of them"
                        )
                        raise UserError(
                            f"{src}: {problem}. {fix}",
                            option=opt,
                            value=key,
                            problem=problem,
                            fix=fix,
                        )
                info = z.getinfo(x_key + ".npy")
                self.total_bytes = info.file_size
                with z.open(info) as fh:
                    self.total_rows = NpyStream(fh, f"{src.name}[{x_key}]").rows
                for key, opt in zip(self.fields, opts[2:], strict=True):
                    with z.open(key + ".npy") as fh:
                        s = NpyStream(fh, f"{src.name}[{key}]")
                        check_column_array(s, src, key, x_key, self.total_rows, opt)
        except zipfile.BadZipFile:
            raise UserError(f"{src}: is not an .npz file (not a zip archive)") from None

    def chunks(self) -> Iterator[Chunk]:
        with (
            zipfile.ZipFile(self.src) as z,
            z.open(self.x_key + ".npy") as fx,
            z.open(self.y_key + ".npy") as fy,
            ExitStack() as stack,
        ):
            xs = NpyStream(fx, f"{self.src.name}[{self.x_key}]")
            ys = NpyStream(fy, f"{self.src.name}[{self.y_key}]")
            cs = [
                NpyStream(stack.enter_context(z.open(k + ".npy")), f"{self.src.name}[{k}]")
                for k in self.fields
            ]
            name = f"{self.src.name}[{self.x_key}]"
            yield from _array_chunks(xs, ys, name, self.total_bytes, cs)


def read_labels_csv(path: Path) -> dict[str, str]:
    """``file,label`` lines (a header is optional) -> {relative path: label}."""
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            for no, row in enumerate(csv.reader(fh), 1):
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) < 2:
                    raise UserError(
                        f"{path}:{no}: needs two columns, file and label",
                        option="--labels",
                        value=path,
                    )
                f, label = row[0].strip(), row[1].strip()
                if no == 1 and not f.lower().endswith(".npy"):
                    continue  # a header
                out[Path(f).as_posix()] = label
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    return out


class NpyDirSource(Source):
    """A folder of ``.npy`` files: one sample per file, or a stack of samples per file.

    The class is the name of the file's first-level subfolder, or comes from ``--labels``
    (a CSV of ``file,label`` with paths relative to the folder). ``per_file="auto"``: a
    file with one more dimension than the smallest-dimensional file is a stack.
    """

    format = "npy-dir"

    def __init__(
        self,
        src: Path,
        labels: Path | None,
        per_file: str = "auto",
        fields: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.fields = list(fields or [])  # "file" or "folder" (lineage.DIR_FIELDS)
        if not src.is_dir():
            raise UserError(
                f"{src}: is not a folder (--format npy-dir takes a folder of .npy files)"
            )
        self.src = src
        self.files = sorted(p for p in src.rglob("*.npy") if p.is_file())
        if not self.files:
            raise UserError(f"{src}: holds no .npy files")
        self.label_of: dict[str, str] = {}
        by_name: dict[str, str] = {}
        if labels is not None:
            table = read_labels_csv(labels)
            for k, v in table.items():
                by_name.setdefault(Path(k).name, v)
        shapes: list[tuple[int, ...]] = []
        for p in self.files:
            rel = p.relative_to(src).as_posix()
            if labels is not None:
                lab = table.get(rel) or by_name.get(p.name)
                if lab is None:
                    raise UserError(
                        f"{labels}: has no label for {rel}. Add a line '{rel},LABEL'",
                        option="--labels",
                        value=labels,
                    )
            else:
                parts = rel.split("/")
                if len(parts) < 2:
                    problem = f"{rel} is not in a class subfolder"
                    fix = f"Put files in {src.name}/CLASS/ or pass --labels LABELS.csv"
                    raise UserError(
                        f"{src}: {problem}. {fix}", option="--labels", problem=problem, fix=fix
                    )
                lab = parts[0]
            self.label_of[rel] = lab
            with open_npy(p) as fh:
                shapes.append(NpyStream(fh, rel).shape)
        self.total_bytes = sum(p.stat().st_size for p in self.files)
        ndims = [len(s) for s in shapes]
        if per_file not in ("auto", "sample", "stack"):
            raise UserError(
                "--per-file takes auto, sample or stack", option="--per-file", value=per_file
            )
        if per_file == "auto":
            low = min(ndims)
            self.stacked = [d > low for d in ndims]
        else:
            self.stacked = [per_file == "stack"] * len(shapes)
        self.total_rows = sum(
            (s[0] if s else 1) if st else 1 for s, st in zip(shapes, self.stacked, strict=True)
        )

    def chunks(self) -> Iterator[Chunk]:
        keys: list[int] = []
        labels: list[Any] = []
        data: list[Any] = []
        names: list[str] = []
        done = 0
        row = 0
        held = 0

        def flush() -> Chunk:
            k = np.asarray(keys, dtype=np.int64)
            nm = list(names)
            return Chunk(
                labels=list(labels),
                data=list(data),
                keys=k,
                locate=lambda i: nm[i],
                bytes_done=done,
                cols=[np.array([self._field(f, r) for r in nm]) for f in self.fields],
            )

        for p, stacked in zip(self.files, self.stacked, strict=True):
            rel = p.relative_to(self.src).as_posix()
            label = self.label_of[rel]
            with open_npy(p) as fh:
                s = NpyStream(fh, rel)
                if not stacked:
                    keys.append(row)
                    labels.append(label)
                    data.append(s.read_sample())
                    names.append(rel)
                    row += 1
                    done += p.stat().st_size
                    held += data[-1].nbytes
                    if len(keys) >= TEXT_ROWS_PER_CHUNK or held >= ARRAY_CHUNK_BYTES:
                        yield flush()
                        keys, labels, data, names, held = [], [], [], [], 0
                    continue
                if keys:
                    yield flush()
                    keys, labels, data, names, held = [], [], [], [], 0
                if not s.shape:
                    raise UserError(f"{rel}: is a single number, not a stack of samples")
                step = max(1, ARRAY_CHUNK_BYTES // max(1, s.row_bytes))
                start_done = done
                size = p.stat().st_size
                a = 0
                while a < s.rows:
                    x = s.read(step)
                    first, b = a, a + len(x)
                    yield Chunk(
                        labels=np.full(len(x), label),
                        data=x,
                        keys=np.arange(row + a, row + b, dtype=np.int64),
                        locate=lambda i, first=first, rel=rel: f"{rel}:row {first + i}",  # type: ignore[misc]
                        bytes_done=start_done + int(size * b / max(1, s.rows)),
                        cols=[np.full(len(x), self._field(f, rel)) for f in self.fields],
                    )
                    a = b
                row += s.rows
                done = start_done + size
        if keys:
            yield flush()

    @staticmethod
    def _field(name: str, rel: str) -> str:
        """A file's lineage field: its path in the folder, or its folder's (``.``: the top)."""
        if name == "file":
            return rel
        return rel.rpartition("/")[0] or "."
