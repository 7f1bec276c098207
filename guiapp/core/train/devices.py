"""One distribution strategy per device mode; the training loop is the same for all of them.

``--devices``:
- ``auto``: the first GPU when there is one, else the CPU (TensorFlow's default strategy);
- ``cpu``: the CPU; ``cpu:N``: N logical CPU devices mirrored (to test multi-device code);
- ``gpu:0,1`` (or ``gpu`` for all GPUs): ``MirroredStrategy`` over those GPUs.
``--cluster SPEC.json`` (with ``--worker-index``): ``MultiWorkerMirroredStrategy`` over the
workers listed in the spec (TF_CONFIG-style), each using its local devices.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError


@dataclass
class Devices:
    strategy: Any
    description: str
    worker: int = 0
    workers: int = 1

    @property
    def is_chief(self) -> bool:
        return self.worker == 0

    @property
    def replicas(self) -> int:
        return int(self.strategy.num_replicas_in_sync)

    @property
    def local_replicas(self) -> int:
        return self.replicas // self.workers


def read_cluster(spec_path: str | os.PathLike[str], worker_index: int) -> dict[str, Any]:
    """A cluster spec: ``{"worker": ["host:port", ...]}`` (or a full TF_CONFIG with "cluster")."""
    path = Path(spec_path)
    try:
        spec = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise UserError(
            f'{path}: cannot read the cluster spec ({exc}). Give a JSON file like {{"worker": ["host1:12345", "host2:12345"]}}'
        ) from None
    cluster = spec.get("cluster", spec)
    workers = cluster.get("worker") if isinstance(cluster, dict) else None
    if (
        not isinstance(workers, list)
        or not workers
        or not all(isinstance(w, str) and ":" in w for w in workers)
    ):
        raise UserError(f"{path}: the cluster spec needs a 'worker' list of host:port addresses")
    if not 0 <= worker_index < len(workers):
        raise UserError(f"{path}: --worker-index {worker_index} is not in 0..{len(workers) - 1}")
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": worker_index}}


def make_devices(
    devices: str = "auto", cluster: str | None = None, worker_index: int = 0
) -> Devices:
    """Create the strategy. Must run before anything else touches TensorFlow devices."""
    import tensorflow as tf

    if cluster:
        tf_config = read_cluster(cluster, worker_index)
        os.environ["TF_CONFIG"] = json.dumps(tf_config)
        _configure_local(tf, devices)
        comm = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.RING
        )
        try:
            strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
        except tf.errors.OpError as exc:
            if "gRPC server" not in str(exc):
                raise
            address = tf_config["cluster"]["worker"][worker_index]
            raise UserError(
                f"{cluster}: worker {worker_index} cannot listen on {address} ({exc.message}). "
                "Another program, or this worker already started, holds the port: stop it, "
                "or give this worker another port in the cluster spec (every worker's copy)"
            ) from None
        n = len(tf_config["cluster"]["worker"])
        return Devices(
            strategy,
            f"{n} workers (MultiWorkerMirroredStrategy), this is worker {worker_index}",
            worker_index,
            n,
        )
    names = _configure_local(tf, devices)
    if len(names) == 1:
        return Devices(one_device(tf, names[0]), f"one device ({names[0]})")
    return Devices(
        tf.distribute.MirroredStrategy(names), f"{len(names)} devices mirrored ({', '.join(names)})"
    )


def one_device(tf: Any, name: str) -> Any:
    """TensorFlow's default strategy when ``name`` is the device TensorFlow places on by
    itself (the first GPU, else the CPU), ``OneDeviceStrategy(name)`` otherwise. The same
    loop runs under both; the default one costs less per step (``guiapp bench train``: the
    tiny model trains ~1.5-2x faster than under OneDeviceStrategy on the CPU)."""
    default = "/gpu:0" if tf.config.list_physical_devices("GPU") else "/cpu:0"
    if name == default:
        return tf.distribute.get_strategy()
    return tf.distribute.OneDeviceStrategy(name)


def _configure_local(tf: Any, devices: str) -> list[str]:
    """The local devices ``devices`` names; an error here concerns ``--devices``."""
    try:
        return _local_devices(tf, devices)
    except UserError as exc:
        raise exc.concerning("--devices", devices) from None


def _local_devices(tf: Any, devices: str) -> list[str]:
    spec = (devices or "auto").strip().lower()
    gpus = tf.config.list_physical_devices("GPU")
    if spec == "auto":
        return ["/gpu:0"] if gpus else ["/cpu:0"]
    if spec == "cpu":
        return ["/cpu:0"]
    if spec.startswith("cpu:"):
        try:
            n = int(spec[4:])
        except ValueError:
            n = 0
        if n < 1:
            raise UserError(f"--devices {devices}: use cpu:N with N >= 1")
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
        return [f"/cpu:{i}" for i in range(n)]
    if spec == "gpu" or spec.startswith("gpu:"):
        if not gpus:
            raise UserError(
                f"--devices {devices}: this machine has no GPU that TensorFlow can use. Use --devices cpu, or install guiapp[gpu] on a CUDA machine"
            )
        ids = list(range(len(gpus))) if spec == "gpu" else _ids(spec[4:], devices)
        bad = [i for i in ids if i >= len(gpus)]
        if bad:
            raise UserError(
                f"--devices {devices}: GPU {bad[0]} does not exist; this machine has {len(gpus)} GPU(s)"
            )
        return [f"/gpu:{i}" for i in ids]
    raise UserError(f"--devices {devices}: use auto, cpu, cpu:N, gpu or gpu:0,1")


def _ids(text: str, original: str) -> list[int]:
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        ids = []
    if not ids:
        raise UserError(f"--devices {original}: list GPU numbers like gpu:0,1")
    return ids


#: What TensorFlow raises on a worker whose collective lost a peer (it died, was stopped,
#: or cannot be reached): every worker of the cluster stops when one does.
PEER_LOST = ("UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError")


def cluster_error(
    exc: BaseException, cluster: str | None, worker_index: int, resume_fix: str
) -> UserError | None:
    """The clear error for a worker whose cluster lost a peer mid-run, naming the peer
    where TensorFlow says which (``/job:worker/replica:0/task:N``); None for anything else."""
    if not cluster or type(exc).__name__ not in PEER_LOST:
        return None
    if not type(exc).__module__.startswith("tensorflow"):
        return None
    text = str(getattr(exc, "message", exc))
    try:
        workers = read_cluster(cluster, worker_index)["cluster"]["worker"]
    except UserError:
        workers = []
    tasks = [int(t) for t in re.findall(r"/job:worker/(?:replica:\d+/)?task:(\d+)", text)]
    peers = sorted({t for t in tasks if t != worker_index})
    if peers:
        who = ", ".join(
            f"worker {t}" + (f" ({workers[t]})" if t < len(workers) else "") for t in peers
        )
    else:
        who = "another worker"
    why = next(
        (ln.strip().rstrip(":") for ln in text.splitlines() if "aborted by" in ln),
        text.strip().splitlines()[-1] if text.strip() else type(exc).__name__,
    )
    return UserError(
        f"{cluster}: worker {worker_index} lost {who}, which stopped or cannot be reached "
        f"({why}). Every worker of a cluster stops when one does; the run keeps its last "
        f"checkpoint: start every worker again, each with its --worker-index, and {resume_fix}"
    )
