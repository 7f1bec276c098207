"""``guiapp`` / ``python -m guiapp``: the GUI without a command, headless jobs with one."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

NO_DISPLAY = (
    "guiapp: no display (DISPLAY and WAYLAND_DISPLAY are unset); run 'xvfb-run guiapp', "
    "'QT_QPA_PLATFORM=offscreen guiapp --smoke out.png', or the headless commands "
    "'guiapp info|check ...' (see 'guiapp --help')"
)


def wants_gui(argv: Sequence[str]) -> bool:
    if not argv:
        return True
    first = argv[0]
    if first in ("-h", "--help", "--version"):
        return False
    from .cli import command_names

    return first not in command_names()


def has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    nice = os.environ.pop("GUIAPP_NICE", "")
    if nice.isdigit() and hasattr(os, "nice"):  # set by the GUI for its background jobs
        os.nice(int(nice))
    if argv[:1] == ["--self-test"]:
        from .cli.self_test import run_self_test

        return run_self_test(argv[1:])
    if wants_gui(argv):
        if not has_display():
            sys.stderr.write(NO_DISPLAY + "\n")
            return 2
        from .ui.app import run_gui

        return run_gui(argv)
    from .cli import main as cli_main

    try:
        return cli_main(argv)
    finally:
        # The process ends here. Its last collection walks every object still alive, and
        # numba leaves hundreds of thousands (0.2 s at the end of an import); the OS frees
        # frozen objects without that walk. (Not in cli.main: tests call it in-process.)
        gc.freeze()


if __name__ == "__main__":
    import multiprocessing

    multiprocessing.freeze_support()
    sys.exit(main())
