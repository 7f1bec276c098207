"""A job's request: the one typed declaration of a command's options (issue 29.1).

A request type is a frozen dataclass whose fields are the command's options, each declared
once with :func:`opt` (its flag, help text, default, choices, range, positional or not).
From that one declaration come:

- the CLI's argparse options (:func:`add_arguments`, one helper for every command) and the
  request the parsed arguments make (:func:`from_args`);
- the request's JSON (:meth:`Request.to_json`, :meth:`Request.from_json`,
  :func:`load_request`, :func:`save_request`), checked for types and ranges, with every
  refusal an :class:`~guiapp.core.errors.OptionError` naming the flag, in the words the
  CLI's own checks use;
- ``guiapp <command> --request FILE``: the job runs a saved request;
- the argument list a request stands for (:func:`to_argv`), and the one a GUI job runs
  (:func:`request_argv`: ``--request FILE`` and the run switches).

A field marked ``run=True`` is a *run switch* (``--events``, ``--plan``, ``--resume``,
``--overwrite``): how to treat what is already there, not what to make. Run switches are
never saved in a request file and may be given beside ``--request``; any other option
given beside ``--request`` is refused in one line (the file holds them all).

Stdlib only (no TensorFlow, no numpy, no Qt): the CLI imports this before anything else.

The package: ``base.py`` (:func:`opt`, :class:`Request`, the checks), ``argv.py`` (the
command line, argument lists and request files), ``jobs.py`` (generate, predict, export),
``importing.py`` (import), ``analysis.py`` (explain, embed, labels, check and a saved
experiment spec's ``train --spec``: what the GUI's other jobs run).
"""

from __future__ import annotations

from .analysis import (
    CheckRequest,
    EmbedRequest,
    ExplainRequest,
    LabelsRequest,
    TrainSpecRequest,
)
from .argv import (
    EVENTS_ARGV,
    OUTPUT_SWITCHES,
    RESUME_FLAG,
    absolute,
    add_arguments,
    from_args,
    gui_request_path,
    job_argv,
    load_request,
    output_request_path,
    request_argv,
    request_output,
    rerun_argv,
    save_request,
    to_argv,
    train_output,
    with_resume,
    without_switches,
)
from .base import (
    REQUEST_FLAG,
    REQUEST_VERSION,
    Opt,
    Request,
    check_value,
    controls,
    default_of,
    field_of_flag,
    flag_of,
    flags,
    is_required,
    opt,
    option,
    saved_fields,
)
from .importing import ImportRequest
from .jobs import ExportRequest, GenerateRequest, PredictRequest

__all__ = [
    "EVENTS_ARGV",
    "OUTPUT_SWITCHES",
    "REQUEST_FLAG",
    "REQUEST_VERSION",
    "RESUME_FLAG",
    "CheckRequest",
    "EmbedRequest",
    "ExplainRequest",
    "ExportRequest",
    "GenerateRequest",
    "ImportRequest",
    "LabelsRequest",
    "Opt",
    "PredictRequest",
    "Request",
    "TrainSpecRequest",
    "absolute",
    "add_arguments",
    "check_value",
    "controls",
    "default_of",
    "field_of_flag",
    "flag_of",
    "flags",
    "from_args",
    "gui_request_path",
    "is_required",
    "job_argv",
    "load_request",
    "opt",
    "option",
    "output_request_path",
    "request_argv",
    "request_output",
    "rerun_argv",
    "save_request",
    "saved_fields",
    "to_argv",
    "train_output",
    "with_resume",
    "without_switches",
]
