"""The generation job: plan, spawn workers that write whole shards, keep the index current.

Only this process writes the index (atomically, whenever a shard is sealed and at the
end); each worker writes its own shards. Stop requests (``cancel()``) reach the workers
through a shared event and take effect within one chunk; the dataset is then valid with
every committed row, and ``resume=True`` finishes it: sealed shards are kept and a
half-written shard continues from its last checkpoint (``worker.checkpoint``).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..atomic import remove_stale_temps
from ..errors import DatasetError, UserError, disk_error, not_enough_space
from ..events import EventSink, RateMeter
from ..provenance import versions
from ..store import remove_dataset, shard_dir
from ..store.format import LABEL_DTYPE, row_nbytes
from ..store.index import DatasetHeader, IndexFile
from ..store.lock import DatasetLock
from ..store.shard_meta import ShardMeta, read_shard_meta
from ..store.shard_stats import ShardStats
from ..store.stats import GenStats, merged
from ..store.writer import now_iso
from . import worker
from .job_plan import Plan, check_same_config, make_plan, sealed_shards, shard_path
from .resume import resumable_point
from .spec import GenConfig

#: How long workers get to finish their chunk after a stop before they are killed.
STOP_GRACE_S = 5.0
PROGRESS_MIN_S = 0.1  # a progress event per chunk a worker writes, at most 10 a second


class WorkerFailed(RuntimeError):
    """A worker hit an internal error; ``detail`` holds its traceback."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message + ("\n" + detail if detail else ""))


def events_log_path(path: Path) -> Path:
    return path.with_name(path.stem + ".events.jsonl")


def planned_meta(cfg: GenConfig, path: Path, k: int) -> ShardMeta:
    """Manifest entry of a shard that has no committed row yet."""
    return ShardMeta(
        path=shard_path(path, k),
        number=k,
        capacity=cfg.rows_of(k),
        committed=0,
        sample_shape=cfg.sample_shape,
        dtype=np.dtype(cfg.dtype),
        x_offset=None,
        y_offset=None,
        compression=None,
        dataset_uuid=cfg.uuid,
        content_hash="",
        stats=ShardStats.empty(cfg.classes),
    )


def plan_generation(cfg: GenConfig, path: Path, workers: int = 1, resume: bool = False) -> Plan:
    """The plan without writing anything (``--plan``)."""
    path = Path(path).absolute()
    kept: set[int] = set()
    if resume and path.exists():
        check_same_config(path, cfg)
        with DatasetLock(path, shared=False, wait_s=0.5):
            pass
        for k in range(cfg.num_shards):
            p = shard_path(path, k)
            try:
                m = read_shard_meta(p, expect_uuid=cfg.uuid) if p.exists() else None
            except DatasetError:
                m = None
            if m and m.content_hash and m.committed == m.capacity == cfg.rows_of(k):
                kept.add(k)
    return make_plan(cfg, path, workers, kept)


class GenerationJob:
    def __init__(
        self,
        cfg: GenConfig,
        path: Path,
        *,
        workers: int = 1,
        sink: EventSink | None = None,
        cancel: Callable[[], bool] | None = None,
        resume: bool = False,
        overwrite: bool = False,
        progress_every_s: float = 0.5,
    ) -> None:
        if workers < 1:
            raise UserError(f"--workers {workers}: give at least 1")
        self.cfg = cfg
        self.path = Path(path).absolute()
        self.workers = workers
        self.sink = sink or EventSink(None, events_log_path(self.path))
        self.cancel = cancel or (lambda: False)
        self.resume = resume
        self.overwrite = overwrite
        self.progress_every_s = progress_every_s
        self.row_bytes = row_nbytes(cfg.sample_shape, np.dtype(cfg.dtype)) + LABEL_DTYPE.itemsize
        self.skipped: dict[int, int] = {}  # shard -> rows with NaN/Inf dropped (skip)

    # -- setup -------------------------------------------------------------------
    def _prepare(self) -> tuple[Plan, dict[int, ShardMeta], dict[str, Any]]:
        cfg, path = self.cfg, self.path
        old: dict[str, Any] = {}
        if self.resume and path.exists():
            old = check_same_config(path, cfg)
        elif path.exists() or shard_dir(path).exists():
            if not (self.overwrite or self.resume):
                raise DatasetError(
                    path,
                    "already exists",
                    "Pass --resume to finish it or --overwrite to replace it",
                )
            remove_dataset(path)
        kept = sealed_shards(path, cfg, note=self._lost)
        plan = make_plan(cfg, path, self.workers, set(kept))
        if plan.bytes_needed > plan.free_bytes:
            raise plan_does_not_fit(plan, path)
        prov = {
            "generator": cfg.generator,
            "generator_file": cfg.file,
            "params": cfg.params,
            "seed": cfg.seed,
            "augment": cfg.augment,
            "config": cfg.to_json(),
            "versions": versions(),
            "created": old.get("created") or now_iso(),
        }
        if old:
            prov["resumed"] = [*old.get("resumed", []), now_iso()]
        return plan, kept, prov

    # -- run -------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Generate; a write that fails because of the disk (full, read-only, ...) ends the
        job with a ``DiskError`` in one line: every committed row is kept for ``--resume``."""
        try:
            return self._run()
        except UserError:
            raise
        except Exception as exc:  # HDF5: an OSError, or a RuntimeError whose text has the errno
            err = disk_error(self.path, exc, resume="rerun the same command with --resume")
            if err is None:
                raise
            self.sink.emit("failed", message=str(err))
            raise err from None

    def _run(self) -> dict[str, Any]:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        with DatasetLock(path, shared=False):
            remove_stale_temps(path)  # an index write of a killed job
            plan, kept, prov = self._prepare()
            cfg = self.cfg
            self.metas = {
                k: kept.get(k) or planned_meta(cfg, path, k) for k in range(cfg.num_shards)
            }
            self.parts = {
                k: GenStats.read_from(m.path, cfg.sample_shape, cfg.dtype) for k, m in kept.items()
            }
            self.skipped = {k: skipped_rows(m.path) for k, m in kept.items()}
            self.header = DatasetHeader(
                uuid=cfg.uuid,
                sample_shape=cfg.sample_shape,
                dtype=np.dtype(cfg.dtype),
                class_names=cfg.class_names,
                shard_capacity=cfg.shard_rows,
                provenance=prov,
                created=str(prov["created"]),
                columns=cfg.columns,
                group_blocks=cfg.group_blocks,
            )
            self._write_index()
            self.sink.emit("started", path=str(path), config=cfg.to_json(), plan=plan.to_json())
            t0 = time.monotonic()
            errors = self._run_workers(plan) if plan.todo and not self.cancel() else []
            return self._finish(plan, errors, time.monotonic() - t0)

    def _write_index(self) -> None:
        """Rewrite the whole index (at the start and the end; a seal writes one record)."""
        metas = [self.metas[k] for k in sorted(self.metas)]
        if self.cfg.on_nonfinite == "skip":
            self.header.provenance["nonfinite_rows_skipped"] = sum(self.skipped.values())
        stats = merged(self.parts.values(), self.cfg.sample_shape, self.cfg.dtype).summary()
        stats["shards_covered"] = len(self.parts)
        self.header.statistics = stats
        complete = all(m.content_hash for m in metas)
        self.index = IndexFile(self.path, self.header, slots=len(metas))
        self.index.group_names = self.cfg.group_table()  # the genomes' names
        self.index.set_all(metas)
        self.index.rewrite(complete=complete)

    def _start(self, plan: Plan) -> tuple[dict[Connection, Any], Any]:
        ctx = mp.get_context("spawn")
        stop = ctx.Event()
        n = min(self.workers, len(plan.todo))
        conns: dict[Connection, Any] = {}
        for i in range(n):
            job: dict[str, Any] = {
                "config": self.cfg.to_json(),
                "path": str(self.path),
                "uuid": self.cfg.uuid,
                "shards": list(plan.todo[i::n]),
            }
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(
                target=worker.main,
                args=(json.dumps(job), w, stop),
                name=f"guiapp-gen-{i}",
                daemon=True,
            )
            p.start()
            w.close()
            conns[r] = p
        return conns, stop

    def _run_workers(self, plan: Plan) -> list[dict[str, Any]]:
        # Read before the workers start: they rewrite these shards' checkpoints as they go.
        written = self._checkpointed(plan)  # half-written shards continue from these rows
        conns, stop = self._start(plan)
        resumed = sum(written.values())
        errors: list[dict[str, Any]] = []
        ended: set[Connection] = set()  # workers that said they ended (done, stopped, error)
        meter = RateMeter(plan.todo_rows - resumed)
        fresh = False  # rows reported since the last progress event

        def report() -> None:
            done = sum(written.values())
            self.sink.emit(
                "progress",
                **meter.update(done - resumed),
                rows_done=plan.rows - plan.todo_rows + done,
                rows_total=plan.rows,
                bytes_written=done * self.row_bytes,
                shards_sealed=sum(1 for m in self.metas.values() if m.content_hash),
                shards=plan.shards,
            )

        report()  # where the job starts (a resumed one: its committed rows), before any chunk
        last = time.monotonic()
        stop_since: float | None = None
        while conns:
            if self.cancel() and not stop.is_set():
                stop.set()
            if stop.is_set():
                stop_since = stop_since or time.monotonic()
                if time.monotonic() - stop_since > STOP_GRACE_S:
                    # A worker stuck in user code (a sleeping generator) does not get to its
                    # next chunk: stop means stop. Its shard keeps every committed row.
                    for conn, proc in conns.items():
                        if proc.is_alive():
                            ended.add(conn)
                            proc.kill()
            for ready in wait(list(conns), timeout=0.25):
                c: Connection = ready  # type: ignore[assignment]
                try:
                    msg = json.loads(c.recv_bytes())
                except (EOFError, OSError):
                    proc = conns.pop(c)
                    proc.join()
                    if c not in ended and not errors:  # it died: not a stop, whatever its code
                        errors.append({"kind": "user", "message": self._died(proc)})
                        stop.set()
                    continue
                kind = msg["t"]
                if kind in ("done", "stopped", "error"):
                    ended.add(c)
                if kind == "rows":
                    written[msg["shard"]] = msg["written"]
                    fresh = True
                elif kind == "sealed":
                    self.skipped[int(msg["shard"])] = int(msg.get("skipped", 0))
                    self._sealed(int(msg["shard"]))
                    last = 0.0  # report each sealed shard at once
                elif kind == "error":
                    errors.append(msg)
                    stop.set()
            now = time.monotonic()
            due = now - last >= (PROGRESS_MIN_S if fresh else self.progress_every_s)
            if due or not conns:
                last, fresh = now, False
                report()
        return errors

    def _died(self, proc: Any) -> str:
        """One line for a worker that ended without saying so (killed, or exited in the
        middle of its shards): which, how, and that ``--resume`` continues."""
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code} in the middle of its shards"
        return (
            f"{self.path}: generation worker {proc.name} (pid {proc.pid}) {how}; every "
            "committed row is kept. Rerun the same command with --resume to continue"
        )

    def _checkpointed(self, plan: Plan) -> dict[int, int]:
        """Rows committed in the unsealed shards that the workers will continue."""
        out = {}
        for k in plan.todo:
            point = resumable_point(shard_path(self.path, k), self.cfg.uuid, self.cfg.rows_of(k))
            if point is not None:
                out[k] = point.rows
        return out

    def _lost(self, message: str) -> None:
        """Rows of a half-written shard that failed their checksums: the shard restarts."""
        self.sink.emit("log", level="warning", message=message)

    def _sealed(self, k: int) -> None:
        m = read_shard_meta(shard_path(self.path, k), expect_uuid=self.cfg.uuid)
        self.metas[k] = m
        self.parts[k] = GenStats.read_from(m.path, self.cfg.sample_shape, self.cfg.dtype)
        self.index.put(m)  # one record in place: the same cost at any shard count

    def _finish(self, plan: Plan, errors: list[dict[str, Any]], elapsed: float) -> dict[str, Any]:
        for k, m in list(self.metas.items()):
            if not m.content_hash and m.path.exists():
                try:
                    self.metas[k] = read_shard_meta(m.path, expect_uuid=self.cfg.uuid)
                except DatasetError:
                    pass
        self._write_index()
        rows = sum(m.committed for m in self.metas.values())
        sealed = sum(1 for m in self.metas.values() if m.content_hash)
        new_rows = rows - (plan.rows - plan.todo_rows)
        result = {
            "path": str(self.path),
            "rows": rows,
            "total": plan.rows,
            "shards_sealed": sealed,
            "shards": plan.shards,
            "elapsed_s": round(elapsed, 3),
            "rows_per_s": round(new_rows / elapsed, 1) if elapsed > 0 else None,
            "bytes_written": new_rows * self.row_bytes,
        }
        if errors:
            err = next((e for e in errors if e.get("kind") == "user"), errors[0])
            self.sink.emit("failed", message=err["message"], **result)
            if err.get("kind") == "user":
                raise UserError(err["message"])
            raise WorkerFailed(err["message"], err.get("detail", ""))
        if sealed < plan.shards:
            self.sink.emit("stopped", reason=getattr(self.cancel, "reason", "") or "stop", **result)
            return {"status": "stopped", **result}
        self.sink.emit("finished", **result)
        return {"status": "finished", **result}


def skipped_rows(shard: Path) -> int:
    """Rows with NaN/Inf that the generator of a sealed shard dropped (``skip``)."""
    with h5py.File(shard, "r", locking=False) as f:
        return int(f.attrs.get(worker.SKIPPED_ATTR, 0))


def plan_does_not_fit(plan: Plan, path: Path) -> UserError:
    return not_enough_space(
        path.parent,
        plan.bytes_needed,
        plan.free_bytes,
        "Free some space, choose another folder, or generate fewer rows",
    )


def generate(cfg: GenConfig, path: str | Path, **kw: Any) -> dict[str, Any]:
    """Run a generation job to its end (or until cancelled); returns the result summary."""
    return GenerationJob(cfg, Path(path), **kw).run()
