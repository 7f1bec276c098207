"""``make walk``: a new user's walk through the real window, under Xvfb, driven with xdotool.

Real X events (mouse clicks, keys) reach the real ``guiapp --demo`` process; the window is
never touched from inside. To know where a button is, the walk reads the file the app's
walk probe writes (``GUIAPP_WALK_PROBE``, :mod:`guiapp.ui.devtools.walk_probe`). Every step
saves a screenshot of the whole X screen (``NN-step.png``) under the folder given (default
``walk-screens/``), and the steps that tripped are listed at the end and in ``walk.json``.

The steps: the demo's first start; generate with augmentation from the form (and its
preview); browse; train; stop; resume and kill -9 the training child; resume; open a
confusion cell; predict; export; quit with a job running (leaving it running); reopen.

Needs ``Xvfb`` and ``xdotool`` (``apt-get install -y xvfb xauth xdotool libxcb-cursor0
libxcb-icccm4 libxcb-keysyms1``). Not part of ``make test``: it takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GUIAPP = [sys.executable, "-m", "guiapp"]
SCREEN = (1280, 800)


class Tripped(Exception):
    """A step did not reach what it waited for."""


class Walk:
    def __init__(self, out: Path, display: str) -> None:
        self.out = out
        self.display = display
        self.work = Path(tempfile.mkdtemp(prefix="guiapp-walk-"))
        self.probe_file = self.work / "probe.json"
        self.app: subprocess.Popen[bytes] | None = None
        self.shots = 0
        self.steps: list[dict[str, Any]] = []
        self.env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "GUIAPP_DATA_DIR": str(self.work / "share"),
            "GUIAPP_DEMO_ROWS": "4000",
            "GUIAPP_DEMO_STEPS": "30",
            "GUIAPP_WALK_PROBE": str(self.probe_file),
            "XDG_CONFIG_HOME": str(self.work / "config"),
            "HOME": str(self.work / "home"),
        }
        from PySide6.QtGui import QGuiApplication

        os.environ["DISPLAY"], os.environ["QT_QPA_PLATFORM"] = display, "xcb"
        self.qt = QGuiApplication([])  # only to take screenshots of the X screen

    # ------------------------------------------------------------------ the app
    def launch(self) -> None:
        self.probe_file.unlink(missing_ok=True)
        log = open(self.work / f"app-{len(self.steps)}.log", "wb")  # noqa: SIM115
        self.app = subprocess.Popen(
            [*GUIAPP, "--demo"], env=self.env, cwd=self.work, stdout=log, stderr=log
        )
        self.wait(lambda p: any(w["kind"] == "MainWindow" for w in p["windows"]), "the window", 60)

    def probe(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.probe_file.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {"windows": [], "widgets": []}

    def wait(
        self, cond: Callable[[dict[str, Any]], Any], what: str, timeout: float = 60
    ) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            p = self.probe()
            try:
                if cond(p):
                    return p
            except (KeyError, IndexError, TypeError):
                pass
            if self.app is not None and self.app.poll() is not None and what != "the app to exit":
                raise Tripped(f"the app exited ({self.app.returncode}) waiting for {what}")
            time.sleep(0.25)
        raise Tripped(f"timed out after {timeout:.0f} s waiting for {what}")

    def find(
        self, text: str, kind: str = "button", window: str | None = None, p: dict | None = None
    ) -> dict[str, Any]:
        p = p or self.probe()
        for w in p["widgets"]:
            named = w["kind"] == kind and w["text"].replace("&", "") == text
            if named and (window is None or window in w["window"]):
                return dict(w)
        raise Tripped(f"no {kind} {text!r}" + (f" in {window!r}" if window else ""))

    def has(self, text: str, kind: str = "button", window: str | None = None) -> bool:
        try:
            self.find(text, kind, window)
            return True
        except Tripped:
            return False

    # ------------------------------------------------------------------ X input
    def xdo(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, check=True, timeout=20)

    def click(self, text: str, kind: str = "button", window: str | None = None) -> None:
        w = self.wait(
            lambda p: self.find(text, kind, window, p)["enabled"], f"{kind} {text!r} enabled", 60
        )
        x, y, width, height = self.find(text, kind, window, w)["rect"]
        self.xdo("mousemove", "--sync", str(x + width // 2), str(y + height // 2))
        self.xdo("click", "1")
        time.sleep(0.3)

    def type_into(self, entry: dict[str, Any], text: str) -> None:
        x, y, width, height = entry["rect"]
        self.xdo("mousemove", "--sync", str(x + width // 2), str(y + height // 2))
        self.xdo("click", "--repeat", "3", "1")
        self.xdo("key", "ctrl+a")
        self.xdo("type", "--delay", "30", text)

    def key(self, *keys: str) -> None:
        self.xdo("key", *keys)
        time.sleep(0.3)

    def page(self, title: str) -> None:
        """Switch pages as a user does: a click on the page's name in the sidebar."""
        self.click(title, "item")
        self.wait(lambda q: q.get("page") == title, f"the {title} page", 10)

    def main_key(self, *keys: str) -> None:
        """Keys to the main window: X focus on it first (there is no window manager)."""
        assert self.app is not None
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--pid", str(self.app.pid), "--name", "guiapp"],
            env=self.env, capture_output=True, text=True, timeout=20,
        ).stdout.split()  # fmt: skip
        if found:
            self.xdo("windowfocus", "--sync", found[-1])
        self.key(*keys)

    # ------------------------------------------------------------------ record
    def shot(self, name: str) -> Path:
        self.shots += 1
        path = self.out / f"{self.shots:02d}-{name}.png"
        time.sleep(0.6)  # let the window paint what the last event changed
        screen = self.qt.primaryScreen()
        if not screen.grabWindow(0).save(str(path)):
            raise OSError(f"could not write {path}")
        return path

    def step(self, name: str, fn: Callable[[], None]) -> bool:
        t = time.monotonic()
        try:
            fn()
            ok, note = True, ""
        except (Tripped, subprocess.SubprocessError, StopIteration, ValueError) as exc:
            ok, note = False, str(exc)
            try:
                self.shot(f"{name}-TRIPPED")
            except OSError:
                pass
        self.steps.append(
            {"step": name, "ok": ok, "note": note, "seconds": round(time.monotonic() - t, 1)}
        )
        print(f"{'ok     ' if ok else 'TRIPPED'} {name} ({time.monotonic() - t:.0f} s) {note}")
        return ok

    # ------------------------------------------------------------------ the steps
    def demo_first_start(self) -> None:
        self.launch()
        self.wait(
            lambda p: any(j["command"] == "generate" for j in p["jobs"]), "the demo's generation"
        )
        self.shot("demo-first-start")
        self.wait(
            lambda p: any(j["command"] == "train" and j["status"] == "finished" for j in p["jobs"]),
            "the demo's training run to finish",
            400,
        )
        time.sleep(3)  # the demo saves its project ("The demo project is ready", then "Saved")
        self.shot("demo-ready")

    def generate_with_augmentation(self) -> None:
        self.page("Datasets")
        self.click("Generate…")
        dialog = "Generate a dataset"
        p = self.wait(lambda q: self.find("100,000", "field", dialog, q), "the Generate dialog")
        self.type_into(self.find("100,000", "field", dialog, p), "3000")
        self.click("Augmentation", "tab", dialog)
        self.click("Add op", "button", dialog)  # the first op that fits 25x25 samples
        self.click("Preview", "button", dialog)
        time.sleep(3)  # the preview is drawn from a worker thread
        self.shot("generate-augmentation")
        self.click("Start", "button", dialog)
        self.wait(
            lambda p: (
                sum(j["command"] == "generate" and j["status"] == "finished" for j in p["jobs"])
                >= 2
            ),
            "the augmented generation to finish",
            300,
        )
        self.shot("generated")

    def browse(self) -> None:
        self.page("Browser")
        time.sleep(2)
        self.shot("browser")

    def train(self) -> None:
        self.page("Training")
        self.click("Start")
        self.wait(lambda p: p["training"]["status"] == "running", "the run to start", 60)
        self.wait(
            lambda p: any(j["command"] == "train" and j["progress"] > 5 for j in p["jobs"]),
            "training progress",
            300,
        )
        self.shot("training")

    def stop(self) -> None:
        self.click("Stop")
        self.wait(lambda p: p["training"]["status"] == "stopped", "the run to stop", 120)
        self.shot("stopped")

    def kill_the_child(self) -> None:
        self.click("Resume")
        p = self.wait(
            lambda q: (
                q["training"]["status"] == "running"
                and any(j["command"] == "train" and j["status"] == "running" for j in q["jobs"])
            ),
            "the resumed run",
            120,
        )
        time.sleep(8)  # a few batches of the resumed run
        pid = next(
            j["pid"] for j in p["jobs"] if j["command"] == "train" and j["status"] == "running"
        )
        os.kill(int(pid), signal.SIGKILL)
        self.wait(lambda q: q["training"]["status"] != "running", "the page to see the kill", 60)
        self.shot("killed")

    def resume(self) -> None:
        self.page("Training")
        self.click("Resume")
        self.wait(lambda p: p["training"]["status"] == "running", "the resumed run", 60)
        self.wait(lambda p: p["training"]["status"] == "finished", "the run to finish", 600)
        self.shot("resumed-finished")

    def confusion_cell(self) -> None:
        self.page("Runs")
        p = self.wait(
            lambda q: [w for w in q["widgets"] if w["kind"] == "confusion"],
            "the confusion matrix",
            60,
        )
        cells = [w for w in p["widgets"] if w["kind"] == "confusion"]
        off = [c for c in cells if c["text"].split(",")[0] != c["text"].split(",")[1]]
        cell = max(off, key=lambda c: c["count"]) if any(c["count"] for c in off) else cells[0]
        self.shot("runs")
        self.xdo("mousemove", "--sync", str(cell["rect"][0] + 2), str(cell["rect"][1] + 2))
        self.xdo("click", "1")
        self.wait(lambda q: q.get("page") == "Browser", "the Browser with the cell's rows", 20)
        time.sleep(2)
        self.shot(f"confusion-cell-{cell['text'].replace(',', '-')}-{cell['count']}-rows")

    def predict(self) -> None:
        self.page("Runs")
        self.click("Predict…")
        dialog = self.wait(
            lambda q: [w for w in q["windows"] if "redict" in w["title"]], "the Predict dialog", 20
        )
        title = next(w["title"] for w in dialog["windows"] if "redict" in w["title"])
        self.click("Start", "button", title)
        self.wait(
            lambda q: (
                any(j["command"] == "predict" and j["status"] == "finished" for j in q["jobs"])
                or self.find("Open in Browser", "button", title, q)["enabled"]
            ),
            "the predictions",
            300,
        )
        self.shot("predict")
        self.key("Escape")

    def export(self) -> None:
        self.page("Runs")
        self.click("Export model…")
        self.wait(
            lambda q: [w for w in q["windows"] if w["title"] == "Export model"],
            "the file dialog",
            20,
        )
        self.shot("export-dialog")
        self.key("Return")
        self.wait(
            lambda q: any(j["command"] == "export" and j["status"] != "running" for j in q["jobs"]),
            "the export",
            300,
        )
        self.shot("exported")

    def quit_with_a_job_running(self) -> None:
        self.page("Training")
        self.type_into(self.find("2", "field"), "40")  # Epochs: a run that outlives the quit
        self.click("Start")
        self.wait(lambda p: p["training"]["status"] == "running", "the run to start", 60)
        time.sleep(3)
        self.main_key("ctrl+q")
        self.wait(lambda q: self.has("Leave training running and quit"), "the quit question", 20)
        self.shot("quit-question")
        self.click("Leave training running and quit")
        self.wait(lambda q: self.has("Save") or not q["windows"], "the save question", 20)
        if self.has("Save"):
            self.shot("quit-save-question")
            self.click("Save")
        assert self.app is not None
        self.app.wait(60)
        runs = subprocess.run(
            ["pgrep", "-f", f"guiapp train --spec {self.work}"], capture_output=True, text=True
        ).stdout.split()
        if not runs:
            raise Tripped("no training left running after 'Leave training running and quit'")

    def reopen(self) -> None:
        self.launch()
        self.page("Training")
        self.wait(lambda p: p["training"]["status"] == "running", "the run followed again", 30)
        time.sleep(3)
        self.shot("reopened-training")
        self.click("Stop")
        self.wait(lambda p: p["training"]["status"] == "stopped", "the followed run to stop", 60)
        self.shot("reopened-stopped")
        self.page("Runs")
        self.shot("reopened-runs")

    def run(self) -> int:
        steps = (self.demo_first_start, self.generate_with_augmentation, self.browse, self.train,
                 self.stop, self.kill_the_child, self.resume, self.confusion_cell, self.predict,
                 self.export, self.quit_with_a_job_running, self.reopen)  # fmt: skip
        try:
            for fn in steps:  # a step is named by its method: kill_the_child is kill-the-child
                if not self.step(fn.__name__.replace("_", "-"), fn) and fn == self.demo_first_start:
                    break
        finally:
            self.close()
        (self.out / "walk.json").write_text(json.dumps(self.steps, indent=1), encoding="utf-8")
        tripped = [s["step"] for s in self.steps if not s["ok"]]
        print(
            f"walk: {len(self.steps) - len(tripped)} of {len(self.steps)} steps ok; screens in {self.out}"
        )
        return 1 if tripped else 0

    def close(self) -> None:
        if self.app is not None and self.app.poll() is None:
            self.app.terminate()
            try:
                self.app.wait(20)
            except subprocess.TimeoutExpired:
                self.app.kill()
        # a run left training in the background: stop it (its pid is in the run lock's probe)
        for line in subprocess.run(
            ["pgrep", "-f", f"guiapp train --spec {self.work}"], capture_output=True, text=True
        ).stdout.split():
            try:
                os.kill(int(line), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        for log in self.work.glob("app-*.log"):
            shutil.copy(log, self.out / log.name)
        shutil.rmtree(self.work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=ROOT / "walk-screens")
    parser.add_argument("--display", default=":77")
    args = parser.parse_args()
    for tool in ("Xvfb", "xdotool"):
        if shutil.which(tool) is None:
            print(f"walk: {tool} is missing; apt-get install -y xvfb xauth xdotool "
                  "libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1", file=sys.stderr)  # fmt: skip
            return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: still clean up
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.png"):
        old.unlink()
    xvfb = subprocess.Popen(
        ["Xvfb", args.display, "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        socket = Path(f"/tmp/.X11-unix/X{args.display.lstrip(':')}")
        for _ in range(100):
            if socket.exists():
                break
            time.sleep(0.1)
        return Walk(args.out, args.display).run()
    finally:
        xvfb.terminate()
        xvfb.wait(10)


if __name__ == "__main__":
    sys.exit(main())
