"""The one table of import formats (issue 29.5): every name a format owns guesses back to
it in import (a folder's file list, ``--format``'s choices), in predict's file input and
in the import preview alike; names no format reads guess none anywhere."""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np
import pytest

from guiapp.cli import build_parser
from guiapp.core.errors import UserError
from guiapp.core.importers import preview
from guiapp.core.importers.formats import (
    FORMATS,
    REGISTRY,
    TEXT_FORMATS,
    ImportFormat,
    guess_format,
)
from guiapp.core.importers.sources import open_source
from guiapp.core.importers.text import text_files
from guiapp.core.predict import file_input


def _names(fmt_suffixes: tuple[str, ...], compressed: tuple[str, ...]) -> list[str]:
    names = [f"rows{s}" for s in fmt_suffixes]
    names += [f"ROWS{s.upper()}" for s in fmt_suffixes]
    return names + [f"rows{s}{c}" for s in fmt_suffixes for c in compressed]


def _write(path: Path, kind: str) -> None:
    if kind == "array":
        if path.suffix == ".npz":
            np.savez(path, x=np.zeros((2, 3), np.uint16), y=np.array([0, 1]))
        else:
            np.save(path, np.zeros((2, 3), np.uint16))
        return
    text = b'{"label": "a", "data": [1, 2]}\n'
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)


@pytest.mark.parametrize("record", REGISTRY, ids=lambda r: r.name)
def test_every_name_of_a_format_guesses_it_in_import_predict_and_preview(
    record: ImportFormat, tmp_path: Path
) -> None:
    if record.folder:  # npy-dir: a folder is one, wherever it is named
        folder = tmp_path / "images.npy"
        folder.mkdir()
        assert guess_format(folder) == preview.guess_format(folder) == record.name
        assert file_input.guess_format(folder, None) == record.name
        return
    names = _names(record.suffixes, record.compressed)
    assert names, f"{record.name} has no names to guess it by"
    folder = tmp_path / "in"
    folder.mkdir()
    for name in names:
        path = folder / name
        _write(path, record.kind)
        assert guess_format(path) == record.name, name  # import (the dialog's guess)
        assert preview.guess_format(path) == record.name, name
        assert file_input.guess_format(path, None) == record.name, name  # predict
    if record.text:  # a folder of the format reads every one of them (and .txt)
        (folder / "notes.txt").write_bytes(b"")
        (folder / "rows.h5").write_bytes(b"")
        found = {p.name for p in text_files(folder, record.name)}
        assert found == {*names, "notes.txt"}
    labels = tmp_path / "y.npy"
    np.save(labels, np.array([0, 1]))
    opts = {"labels": labels} if "labels" in record.options else {}
    source = open_source(record.name, folder / names[0], **opts)  # type: ignore[arg-type]
    assert source.format == record.name  # the record's reader reads its own format


def test_a_name_no_format_reads_guesses_none_and_predict_asks_for_format(tmp_path: Path) -> None:
    for name in ("x.npy.gz", "x.npz.gz", "notes.txt", "data.h5", "x.gz", "noext"):
        path = tmp_path / name
        path.write_bytes(b"")
        assert guess_format(path) is None and preview.guess_format(path) is None, name
        with pytest.raises(UserError, match="cannot tell the format from the name"):
            file_input.guess_format(path, None)
    assert file_input.guess_format(tmp_path / "notes.txt", "tsv") == "tsv"  # --format wins


def test_the_table_names_the_commands_choices() -> None:
    """``--format``'s choices (import, the request's argparse) are the table's names, and
    the suffixes of no two formats overlap (each name guesses one format)."""
    sub = next(
        a for a in build_parser("import")._actions if isinstance(a, argparse._SubParsersAction)
    )
    choices = next(a.choices for a in sub.choices["import"]._actions if a.dest == "format")
    assert choices is not None
    assert tuple(choices) == FORMATS == tuple(r.name for r in REGISTRY)
    assert set(TEXT_FORMATS) == {"jsonl", "csv", "tsv"}
    suffixes = [s for r in REGISTRY for s in r.suffixes]
    assert len(suffixes) == len(set(suffixes))
