"""The request of ``guiapp import``: every option, once (docs/IMPORT.md says what each does).

The job reads it as an :class:`~guiapp.core.importers.config.ImportConfig`, built from the
request in one place (``ImportConfig.from_request``). Values are checked there and by the
job, in the words the command has always used (``--workers x: give a number of processes
(1 or more) or auto``, ``--memory-mb must be positive``): a request file's bad value is
refused in the same words as the option's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..importers.formats import FORMATS  # the one table of formats: stdlib only
from .base import Request, opt

#: The formats ``guiapp import`` reads (``--format``'s choices).
IMPORT_FORMATS = FORMATS
_FIELDS, _SAMPLES, _JOB = "fields", "samples", "job"
_TEXT = "JSON field, or CSV column name/0-based index"


@dataclass(frozen=True, kw_only=True)
class ImportRequest(Request):
    """``guiapp import``: every option, once."""

    COMMAND: ClassVar[str] = "import"

    src: str = opt(positional=True, path=True, help="input file or folder")
    out: str = opt(positional=True, path=True, help="the new dataset's index file, OUT.h5")
    format: str = opt(choices=IMPORT_FORMATS, help="input format")
    labels: str | None = opt(
        None,
        group=_FIELDS,
        path=True,
        help="npy: a .npy of one label per sample; npy-dir: a CSV of file,label lines",
    )
    label_field: str = opt("label", group=_FIELDS, help=_TEXT)
    data_field: str = opt("data", group=_FIELDS, help=_TEXT)
    delimiter: str | None = opt(
        None, group=_FIELDS, help="CSV/TSV column separator (default ',' or tab)"
    )
    x_key: str = opt("x", group=_FIELDS, help="npz: the samples' array (default x)")
    y_key: str = opt("y", group=_FIELDS, help="npz: the labels' array (default y)")
    per_file: str = opt(
        "auto",
        group=_FIELDS,
        choices=("auto", "sample", "stack"),
        help="npy-dir: each file is one sample or a stack of samples (default auto)",
    )
    group_field: str | None = opt(
        None,
        group=_FIELDS,
        metavar="FIELD",
        help="each row's group (its lineage: rows of one group never straddle a train/"
        "validation split): a JSON field, a CSV column name/0-based index, an .npz array, "
        "or for npy-dir 'file' (each file a group) or 'folder' (each folder a group)",
    )
    #: ``a,b`` (command line, a form) or (in a request file) the list
    keep_fields: str | list[str] | None = opt(
        None,
        group=_FIELDS,
        metavar="A,B,...",
        help="fields (npz: arrays; npy-dir: file, folder) kept per row as columns of the "
        "dataset, e.g. _id,name, so predictions join back to their source",
    )
    length: int | None = opt(None, group=_SAMPLES, help="pad or truncate 1-D rows to this length")
    pad: str = opt("post", group=_SAMPLES, choices=("post", "pre"), help="pad at the end (post)")
    truncate: str = opt(
        "pre",
        group=_SAMPLES,
        choices=("post", "pre"),
        help="cut long rows at the start (pre, Keras pad_sequences' default) or end (post)",
    )
    pad_value: float = opt(0, group=_SAMPLES, help="padding value (default 0)")
    dtype: str | None = opt(
        None,
        group=_SAMPLES,
        help="storage dtype (default uint16 for text, the arrays' own otherwise)",
    )
    #: ``a,b`` (command line, a form) or (in a request file) the list
    class_names: str | list[str] | None = opt(
        None, group=_SAMPLES, help="comma-separated class names, in class-index order"
    )
    on_error: str = opt(
        "abort",
        group=_JOB,
        choices=("skip", "abort"),
        help="on a bad row: stop with its file:line (abort, default) or leave it out (skip)",
    )
    on_nonfinite: str = opt(
        "abort",
        group=_JOB,
        choices=("skip", "abort"),
        help="rows holding NaN/Inf: refuse the import naming where they are (abort, default) "
        "or leave them out, counted in the provenance (skip)",
    )
    seed: int = opt(0, group=_JOB, help="shuffle seed (default 0)")
    #: ``auto`` or a number of processes, as text (checked where the config is built)
    workers: str = opt(
        "auto",
        group=_JOB,
        help="processes parsing text input (default auto: the machine's cores, at most 8); "
        "the dataset is the same for any number",
    )
    piece_mb: float = opt(16, group=_JOB, hidden=True)
    resume: bool = opt(
        False,
        run=True,
        group=_JOB,
        help="continue an import that was stopped or killed, from its last checkpoint",
    )
    memory_mb: float = opt(256, group=_JOB, help="memory budget of the shuffle (default 256)")
    shard_rows: int | None = opt(None, group=_JOB, help="rows per shard (default: about 512 MiB)")
    compression: str = opt(
        "none", group=_JOB, choices=("none", "lzf", "gzip"), help="shard compression"
    )
    overwrite: bool = opt(False, run=True, group=_JOB, help="replace an existing OUT.h5")
    events: str | None = opt(
        None,
        run=True,
        group=_JOB,
        metavar="-",
        help="'-': JSON-line events on stdout instead of progress text",
    )
