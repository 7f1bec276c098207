"""``guiapp export RUN_DIR --format keras|savedmodel|tflite``: a run's model for deployment."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core.logs import divert_native_stderr


def register(sub: Any) -> None:
    s = sub.add_parser(
        "export",
        help="export a run's model (keras, savedmodel, tflite), checked by reloading it",
        description="Write a run's model in a deployment format, reload it and compare its "
        "predictions on a few hundred rows with the original model (max abs difference).",
    )
    s.add_argument("run", help="a run folder (or a MODEL.keras file)")
    s.add_argument("--format", required=True, choices=("keras", "savedmodel", "tflite"))
    s.add_argument("--out", default=None, help="where to write (default RUN_DIR/export/model.*)")
    s.add_argument("--which", default="best", choices=("best", "last"), help="a run's model")
    s.add_argument("--rows", type=int, default=256, help="rows compared after the reload")
    s.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..core.errors import UserError, check_writable_output
    from ..core.model.keras_file import check_keras_file
    from ..core.predict.source import resolve_model

    # A bad path, a damaged model file or one holding code, an output that cannot be
    # written: one line before TensorFlow loads.
    check_keras_file(resolve_model(args.run, args.which).path)
    if args.out:
        check_writable_output(args.out, folder=args.format == "savedmodel", option="--out")
    if args.rows < 1:
        raise UserError(f"--rows {args.rows}: compare at least 1 row")
    divert_native_stderr()
    from ..core.predict.export import export_model

    result = export_model(args.run, args.format, args.out, which=args.which, rows=args.rows)
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    if not result["ok"]:
        sys.stderr.write(
            f"guiapp export: the {args.format} export differs from the model by "
            f"{result['max_abs_diff']:.3g} (tolerance {result['tolerance']:g})\n"
        )
        return 1
    return 0
