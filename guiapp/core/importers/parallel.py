"""Pieces parsed by worker threads or processes, handed back in piece order.

Where the compiled scan parses the pieces (``jitparse``: it runs without the GIL) the
workers are threads of the job's own process: no second numba start, no transport of
the results. Otherwise (no numba, or a layout the scan does not take: the numpy paths
hold the GIL) they are processes. Worker processes are ``spawn``ed processes (no fork of a big parent, no pickle): each gets the
``ParseSpec`` as JSON, then piece numbers over a pipe, and answers each with the piece's
``PieceResult`` as bytes (a JSON header and raw arrays). The job keeps two pieces in
flight per worker and takes the answers back in piece order, so the rows reach the
shuffle in the same order whatever the worker count. With one worker, pieces are parsed
in the job's own process.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import traceback
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from ..errors import UserError
from ..jit import available as numba_available
from .piece_plan import Piece
from .piece_result import ParseSpec, PieceResult
from .pieces import PieceParser

IN_FLIGHT = 2


def default_workers() -> int:
    return max(
        1,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1),
    )


def _worker(spec_json: str, pieces_json: str, conn: Connection) -> None:
    parser = PieceParser(ParseSpec.from_json(json.loads(spec_json)))
    pieces = [Piece(*p) for p in json.loads(pieces_json)]
    try:
        while True:
            msg = conn.recv_bytes()
            if not msg:
                return
            conn.send_bytes(parser.parse(pieces[int(msg)]).to_bytes())
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        return
    except BaseException:
        try:
            conn.send_bytes(b"!" + traceback.format_exc().encode())
        except OSError:
            pass


class WorkerFailed(RuntimeError):
    pass


def parse_in_order(
    spec: ParseSpec, pieces: list[Piece], start: int, workers: int
) -> Iterator[PieceResult]:
    """``PieceResult`` of ``pieces[start:]``, in order, parsed by ``workers`` processes."""
    if workers <= 1 or len(pieces) - start <= 1:
        parser = PieceParser(spec)
        for p in pieces[start:]:
            yield parser.parse(p)
        return
    if numba_available() and PieceParser(spec).scans(pieces[start]):
        yield from _threads(spec, pieces, start, workers)
        return
    ctx = mp.get_context("spawn")
    n = min(workers, len(pieces) - start)
    spec_json = json.dumps(spec.to_json())
    pieces_json = json.dumps([[p.index, p.file, p.start, p.end] for p in pieces])
    conns: list[Connection] = []
    procs: list[Any] = []
    try:
        for i in range(n):
            a, b = ctx.Pipe(duplex=True)
            proc = ctx.Process(
                target=_worker,
                args=(spec_json, pieces_json, b),
                name=f"guiapp-import-{i}",
                daemon=True,
            )
            proc.start()
            b.close()
            conns.append(a)
            procs.append(proc)
        nxt = start
        sent: list[int] = []  # piece numbers in flight, oldest first (piece k goes to k % n)

        def send() -> None:
            nonlocal nxt
            while nxt < len(pieces) and len(sent) < IN_FLIGHT * n:
                conns[(nxt - start) % n].send_bytes(str(nxt).encode())
                sent.append(nxt)
                nxt += 1

        send()
        while sent:
            k = sent.pop(0)
            try:
                data = conns[(k - start) % n].recv_bytes()
            except EOFError:
                raise WorkerFailed(
                    f"import worker {(k - start) % n} died while parsing piece {k}"
                ) from None
            if data[:1] == b"!":
                raise WorkerFailed(data[1:].decode(errors="replace"))
            send()
            yield PieceResult.from_bytes(data)
    finally:
        for c in conns:
            try:
                c.send_bytes(b"")
            except OSError:
                pass
            c.close()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()


def _threads(
    spec: ParseSpec, pieces: list[Piece], start: int, workers: int
) -> Iterator[PieceResult]:
    """``parse_in_order`` by ``workers`` threads, each with its own parser."""
    n = min(workers, len(pieces) - start)
    free = [PieceParser(spec) for _ in range(n)]  # (a parser keeps per-piece state)

    def parse(piece: Piece) -> PieceResult:
        parser = free.pop()
        try:
            return parser.parse(piece)
        finally:
            free.append(parser)

    pool = ThreadPoolExecutor(n, thread_name_prefix="guiapp-import")
    todo: deque[Future[PieceResult]] = deque()
    try:
        nxt = start
        while nxt < len(pieces) or todo:
            while nxt < len(pieces) and len(todo) < IN_FLIGHT * n:
                todo.append(pool.submit(parse, pieces[nxt]))
                nxt += 1
            yield todo.popleft().result()
    finally:
        for f in todo:
            f.cancel()
        pool.shutdown(wait=True)


__all__ = ["UserError", "WorkerFailed", "default_workers", "parse_in_order"]
