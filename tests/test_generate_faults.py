"""Issue 35.8 and 35.9: a generation worker that dies is a failure, not a stop; what a
user generator prints never reaches the event stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import guiapp

from guiapp.core.store import Dataset

DIES = """
import multiprocessing, os, signal
import numpy as np

def generate(rng, n, params):
    if multiprocessing.parent_process() is not None and os.environ.get("DIE") and params["k"]:
        params["k"] -= 1  # (a fresh dict each call: the worker dies at its first chunk)
        if os.environ["DIE"] == "exit0":
            os._exit(0)
        os.kill(os.getpid(), signal.SIGKILL)
    return rng.normal(size=(n, 4)), rng.integers(0, 2, n)
"""

PRINTS = """
import numpy as np
print('{"event": "finished", "from": "the import of the file"}')

def generate(rng, n, params):
    print('{"event": "finished", "rows": 0}')
    return rng.normal(size=(n, 4)), rng.integers(0, 2, n)
"""

ARGS = ["--shape", "4", "--classes", "2", "--n", "8000", "--shard-rows", "2000", "--workers", "2"]


@pytest.mark.parametrize(("how", "said"), [("exit0", "exited with status 0"),
                                            ("kill", "killed by signal SIGKILL")])  # fmt: skip
def test_a_worker_that_dies_is_a_failure_with_resume(tmp_path: Path, how: str, said: str) -> None:
    import os

    gen = tmp_path / "dies.py"
    gen.write_text(DIES)
    out = tmp_path / "d.h5"
    cmd = ["generate", out, "--generator", gen, *ARGS, "--params", '{"k": 1}']
    r = guiapp(*cmd, env={**os.environ, "DIE": how})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert said in lines[-1] and "guiapp-gen-" in lines[-1] and "--resume" in lines[-1]
    assert "Traceback" not in r.stderr and "stopped" not in r.stderr
    r = guiapp(*cmd, "--resume")
    assert r.returncode == 0, r.stderr
    with Dataset(out) as ds:
        assert len(ds) == 8000 and ds.complete


def test_what_a_generator_prints_goes_to_stderr(tmp_path: Path) -> None:
    gen = tmp_path / "prints.py"
    gen.write_text(PRINTS)
    r = guiapp("generate", tmp_path / "p.h5", "--generator", gen, *ARGS, "--events", "-")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[0]["event"] == "started" and events[-1]["event"] == "finished"
    assert [e for e in events if e["event"] == "finished"] == events[-1:]
    assert all("time" in e for e in events)  # every line is one of the job's own
    assert '"from": "the import of the file"' in r.stderr and '"rows": 0' in r.stderr


SLEEPS = """
import multiprocessing, time
import numpy as np

def generate(rng, n, params):
    if multiprocessing.parent_process() is not None and params["k"]:
        time.sleep(600)  # stuck in user code: never reaches its next chunk
    return rng.normal(size=(n, 4)), rng.integers(0, 2, n)
"""


def test_stop_stops_a_generator_stuck_in_user_code(tmp_path: Path) -> None:
    """Issue 35.7: SIGTERM to a job whose workers sleep in the user's generate(): the job
    ends as stopped (exit 0) after its grace period, leaving a valid, resumable dataset."""
    import signal
    import subprocess
    import sys

    from conftest import ENV

    gen = tmp_path / "sleeps.py"
    gen.write_text(SLEEPS)
    out = tmp_path / "s.h5"
    cmd = ["generate", str(out), "--generator", str(gen), *ARGS]
    proc = subprocess.Popen([sys.executable, "-m", "guiapp", *cmd, "--params", '{"k": 1}',
                             "--events", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["event"] == "progress":
            break
    proc.send_signal(signal.SIGTERM)
    rest, _err = proc.communicate(timeout=120)  # (the workers sleep for 600 s)
    assert proc.returncode == 0 and json.loads(rest.splitlines()[-1])["event"] == "stopped"
    with Dataset(out) as ds:  # a valid dataset, unfinished: --resume would continue it
        assert not ds.complete and len(ds) < 8000
