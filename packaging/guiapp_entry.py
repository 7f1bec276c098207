"""Entry script of the frozen app (PyInstaller): the same ``main`` as ``guiapp``/``python -m guiapp``.

``freeze_support()`` comes first: a multiprocessing 'spawn' worker (generation jobs) is this
same executable started with ``--multiprocessing-fork``, and must run the worker, not the app.
The frozen binary takes the same arguments as the ``guiapp`` command (docs/ARCHITECTURE.md, "The process
model": the GUI runs its jobs as ``sys.executable <command>``).
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from guiapp.__main__ import main

    sys.exit(main())
