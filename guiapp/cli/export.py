"""``guiapp export RUN_DIR --format keras|savedmodel|tflite``: a run's model for deployment
(options: :class:`~guiapp.core.requests.ExportRequest`; ``--request FILE`` runs a saved one)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.logs import divert_native_stderr
from ..core.requests import ExportRequest, add_arguments, from_args


def register(sub: Any) -> None:
    s = sub.add_parser(
        "export",
        help="export a run's model (keras, savedmodel, tflite), checked by reloading it",
        description="Write a run's model in a deployment format, reload it and compare its "
        "predictions on a few hundred rows with the original model (max abs difference).",
    )
    add_arguments(s, ExportRequest)  # every option: the request type declares it
    s.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    return run_request(from_args(ExportRequest, args))


def run_request(req: ExportRequest) -> int:
    """Run a ``guiapp export`` request; a checked export keeps it beside itself
    (``model.request.json``)."""
    from ..core.errors import UserError, check_writable_output
    from ..core.model.keras_file import check_keras_file
    from ..core.predict.source import resolve_model

    # A bad path, a damaged model file or one holding code, an output that cannot be
    # written: one line before TensorFlow loads.
    check_keras_file(resolve_model(req.run, req.which).path)
    if req.out:
        check_writable_output(req.out, folder=req.format == "savedmodel", option="--out")
    if req.rows < 1:
        raise UserError(f"--rows {req.rows}: compare at least 1 row")
    divert_native_stderr()
    from ..core.predict.export import export_model

    result = export_model(req.run, req.format, req.out, which=req.which, rows=req.rows)
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    if result["ok"]:
        import contextlib
        from pathlib import Path

        from ..core.requests import absolute, output_request_path, save_request

        with contextlib.suppress(OSError):
            save_request(output_request_path(Path(result["out"])), absolute(req))
    if not result["ok"]:
        sys.stderr.write(
            f"guiapp export: the {req.format} export differs from the model by "
            f"{result['max_abs_diff']:.3g} (tolerance {result['tolerance']:g})\n"
        )
        return 1
    return 0
