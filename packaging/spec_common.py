"""What every guiapp PyInstaller spec shares (Linux, Windows, macOS): the analysis inputs.

Imported by guiapp.spec, guiapp-windows.spec and macos/guiapp-macos.spec (which put this
folder on sys.path). Paths are absolute, so the specs run from any working directory.
"""

from __future__ import annotations

from pathlib import Path

from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

PACKAGING = Path(__file__).resolve().parent
ROOT = PACKAGING.parent
ENTRY = str(PACKAGING / "guiapp_entry.py")
ICONS = ROOT / "resources" / "icons"

# Qt: the app uses QtCore/QtGui/QtWidgets (+ what pyqtgraph imports); never a second binding.
QT_EXCLUDES = [
    f"PySide6.{m}"
    for m in [
        "Qt3DAnimation",
        "Qt3DCore",
        "Qt3DExtras",
        "Qt3DInput",
        "Qt3DLogic",
        "Qt3DRender",
        "QtBluetooth",
        "QtCharts",
        "QtDataVisualization",
        "QtGraphs",
        "QtDesigner",
        "QtHelp",
        "QtHttpServer",
        "QtLocation",
        "QtMultimedia",
        "QtMultimediaWidgets",
        "QtNetworkAuth",
        "QtNfc",
        "QtPdf",
        "QtPdfWidgets",
        "QtPositioning",
        "QtQml",
        "QtQuick",
        "QtQuick3D",
        "QtQuickControls2",
        "QtQuickTest",
        "QtQuickWidgets",
        "QtRemoteObjects",
        "QtScxml",
        "QtSensors",
        "QtSerialBus",
        "QtSerialPort",
        "QtSpatialAudio",
        "QtSql",
        "QtStateMachine",
        "QtTest",
        "QtTextToSpeech",
        "QtUiTools",
        "QtWebChannel",
        "QtWebEngineCore",
        "QtWebEngineQuick",
        "QtWebEngineWidgets",
        "QtWebSockets",
        "QtWebView",
        "QtXml",
        "QtAxContainer",
        "QtCanvasPainter",
    ]
] + ["PyQt5", "PyQt6", "PySide2", "sip"]

EXCLUDES = QT_EXCLUDES + [
    "tkinter",
    "_tkinter",
    "matplotlib",
    "IPython",
    "jupyter_client",
    "notebook",
    "pytest",
    "hypothesis",
    "mypy",
    "ruff",
    "jax",
    "jaxlib",
    "torch",
    "pyqtgraph.examples",
    "pyqtgraph.opengl",  # needs PyOpenGL, not installed
    # Not frozen, to keep the bundle small: the installed app's runs write no TensorBoard files and
    # say so in their events (core/train/tensorboard_log.py: tensorboard_missing). The venv has it.
    "tensorboard",
    "clang",  # libclang: a TF build-time tool
    "PyInstaller",
    # Not frozen: numba caches its compiled import scan next to the source, which a bundle
    # does not have, so each import would compile it again (~8 s); the bundle's imports use
    # the numpy path (core/importers/jitparse.py: available() is False), ~200 MB smaller.
    "numba",
    "llvmlite",
]


def hiddenimports() -> list[str]:
    # Everything of guiapp (the CLI imports its commands lazily), Keras 3's lazily loaded
    # modules (keras.src.*, imported by name from saved .keras configs), h5py's cython parts,
    # and what tensorflow's contrib hook already collects (tensorflow.*).
    mods = collect_submodules("guiapp")
    mods += collect_submodules("keras")
    mods += collect_submodules("h5py")
    mods += collect_submodules("ml_dtypes")
    mods += collect_submodules("optree")
    mods += ["xxhash", "psutil", "pyqtgraph", "multiprocessing.spawn"]
    return sorted(set(mods))


def datas() -> list[tuple[str, str]]:
    d: list[tuple[str, str]] = [(str(ROOT / "resources"), "resources")]
    d += collect_data_files("guiapp")
    d += collect_data_files("keras")
    d += collect_data_files("pyqtgraph", excludes=["**/examples/*"])
    # importlib.metadata.version(...) is read at run time (About box, provenance records)
    for dist in (
        "guiapp",
        "keras",
        "tensorflow-cpu",
        "tensorflow",  # the macOS arm64 dist name
        "numpy",
        "h5py",
        "PySide6-Essentials",
        "shiboken6",
        "pyqtgraph",
        "psutil",
        "xxhash",
        "ml_dtypes",
        "protobuf",
    ):
        try:
            d += copy_metadata(dist)
        except Exception:  # a dist of another name on this platform: metadata is optional
            pass
    return d


# Ship .py sources beside the bytecode where TensorFlow's AutoGraph reads them
# (tf.function converts Python source; without it AutoGraph warns and runs unconverted).
MODULE_COLLECTION_MODE = {
    "guiapp": "pyz+py",
    "keras": "pyz+py",
    "tensorflow.python.autograph": "pyz+py",
}


def analysis_kwargs() -> dict[str, object]:
    return dict(
        pathex=[str(ROOT)],
        binaries=[],
        datas=datas(),
        hiddenimports=hiddenimports(),
        hookspath=[],
        hooksconfig={},
        runtime_hooks=[],
        excludes=EXCLUDES,
        noarchive=False,
        module_collection_mode=MODULE_COLLECTION_MODE,
        optimize=0,  # keep asserts and docstrings (TF/Keras read docstrings)
    )


# Host libraries PyInstaller's dependency scan picks up that the bundle must NOT carry:
# - libstdc++/libgcc_s: the system's (newer) copy must be the one loaded, or the system's
#   OpenGL/Mesa drivers that Qt loads (they need a recent libstdc++) fail; bundling the build
#   host's copy also raises the glibc floor (Debian 12's libstdc++ needs GLIBC_2.36).
# - libexpat: same floor issue (GLIBC_2.36); every desktop system has libexpat1.
# - the GTK3 platform theme plugin and the GTK stack it drags in: it only works against the
#   system's own GTK, and half of that stack bundled beside the system's other half is the
#   classic source of symbol-lookup errors. Qt falls back to its generic/xdg-portal theme.
LINUX_DROP_PREFIXES = (
    "libstdc++.so",
    "libgcc_s.so",
    "libexpat.so",
    "libatk-1.0.so",
    "libcairo.so",
    "libcairo-gobject.so",
    "libpango-1.0.so",
    "libpangocairo-1.0.so",
    "libpangoft2-1.0.so",
    "libgdk_pixbuf-2.0.so",
    "libthai.so",
    "libdatrie.so",
    "libfribidi.so",
    "libpixman-1.so",
)
LINUX_DROP_PATHS = ("PySide6/Qt/plugins/platformthemes/libqgtk3.so",)


def linux_filter_binaries(binaries: list) -> list:  # type: ignore[type-arg]
    kept = []
    for entry in binaries:
        dest = entry[0].replace("\\", "/")
        name = dest.rsplit("/", 1)[-1]
        if "/" not in dest and name.startswith(LINUX_DROP_PREFIXES):
            continue
        if dest in LINUX_DROP_PATHS:
            continue
        kept.append(entry)
    return kept
