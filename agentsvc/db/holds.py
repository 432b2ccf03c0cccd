"""How long each write transaction holds the writer, and where the slow ones were opened.

A write transaction is timed from the moment it holds the writer (SQLite: the write lock
taken, just before `BEGIN IMMEDIATE`; PostgreSQL: the transaction open) to the end of its
COMMIT or ROLLBACK. While it runs, every other write waits, so it should hold SQL only:
checks, listings and other CPU-bound work go before it, in a worker thread. One held
longer than `[database] slow_write_ms` logs one warning naming the place that opened it
(the first frame outside this package: `file:line` of the `async with db.write()`, or of
the unit given to `write_batched`). The test suite sets a stricter limit with `watch`.

The hot path is a clock read and a frame reference; the place is worked out only for a
slow transaction.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_SKIPPED = (_PACKAGE_DIR, contextlib.__file__)
_ROOT = str(Path(__file__).resolve().parent.parent.parent) + "/"

Watcher = Callable[[float, float, str], None]
T = TypeVar("T")
# (limit in seconds, callback) of every `watch` in force: every database of the process.
_watchers: list[tuple[float, Watcher]] = []
_strictest = [float("inf")]  # the lowest of their limits
# While watched: the latest garbage collections, (began, ended) by time.perf_counter.
_collections: deque[tuple[float, float]] = deque(maxlen=256)
_collecting = [0.0]


class _Waits:
    """A watched transaction's seconds of the loop thread's CPU spent while its task waited
    on the database (`awaited`): the loop ran other tasks then, whose work is not the
    transaction's. Set in the task's context for the transaction's time."""

    __slots__ = ("seconds", "token")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.token = _waits.set(self)


_waits: contextvars.ContextVar[_Waits | None] = contextvars.ContextVar(
    "agentsvc_write_waits", default=None
)
# WriteClock.start's answer: time.perf_counter, the thread's CPU time, and the waits (the
# last two only while watched).
Started = tuple[float, float, "_Waits | None"]


def _on_collection(phase: str, info: dict) -> None:
    if phase == "start":
        _collecting[0] = time.perf_counter()
    else:
        _collections.append((_collecting[0], time.perf_counter()))


def _collected_within(started: float, ended: float) -> float:
    """Seconds of garbage collection between two times (as far as recorded)."""
    return sum(max(0.0, min(e, ended) - max(b, started)) for b, e in _collections)


def watch(limit_seconds: float, callback: Watcher) -> Callable[[], None]:
    """Call `callback(held_seconds, cpu_seconds, where_opened)` for every write
    transaction of any database of this process that holds the writer longer than
    `limit_seconds` (`cpu_seconds`: the CPU time the thread that opened it, the event
    loop's, used meanwhile, except while the transaction's task waited on the database:
    work done inside the transaction runs there, while other threads' work, such as
    password hashing or XML signatures for other requests, and other tasks' work on the
    loop while the transaction waited, does not hold it); return the function that
    stops it (the test suite's guard).

    Time spent collecting garbage meanwhile is not counted: a collection pauses every
    thread of the process, whatever it was doing, and the test process's heap (pytest and
    every module of the suite) is far larger than a service's."""
    entry = (limit_seconds, callback)
    if not _watchers:
        gc.callbacks.append(_on_collection)
    _watchers.append(entry)
    _strictest[0] = min(limit for limit, _ in _watchers)
    return functools.partial(_unwatch, entry)


def _unwatch(entry: tuple[float, Watcher]) -> None:
    if entry in _watchers:
        _watchers.remove(entry)
    _strictest[0] = min((limit for limit, _ in _watchers), default=float("inf"))
    if not _watchers and _on_collection in gc.callbacks:
        gc.callbacks.remove(_on_collection)
        _collections.clear()


async def awaited(statement: Awaitable[T]) -> T:
    """Await one statement of a transaction whose statements suspend its task (a thread's
    connection, PostgreSQL): while it waits, the loop thread's CPU is other tasks', and a
    watched transaction does not count it (the fast path is one context variable read)."""
    waits = _waits.get()
    if waits is None:
        return await statement
    began = time.thread_time()
    try:
        return await statement
    finally:
        waits.seconds += time.thread_time() - began


class WriteClock:
    """Times the write transactions of one database (`slow_ms` 0: no warnings)."""

    __slots__ = ("slow",)

    def __init__(self, slow_ms: float):
        self.slow = slow_ms / 1000 if slow_ms > 0 else float("inf")

    @staticmethod
    def start() -> Started:
        """Now, for `stopped`: time.perf_counter, and when watched this thread's CPU time
        and the count of what the transaction's task waits on the database (`awaited`)."""
        if not _watchers:
            return time.perf_counter(), 0.0, None
        return time.perf_counter(), time.thread_time(), _Waits()

    def stopped(self, start: Started, opener: Any, lasti: int = -1) -> float:
        """The transaction begun at `start` (see `start`) ended: report it when slow.
        `opener` is the frame that opened it (with its `f_lasti` then), or the function
        of a batched unit. Returns the seconds it held the writer."""
        ended = time.perf_counter()
        held = ended - start[0]
        waits = start[2]
        if waits is not None:
            with contextlib.suppress(ValueError):  # ended in another context: left as is
                _waits.reset(waits.token)
        if held > self.slow or held > _strictest[0]:
            self._report(held, start, ended, where_opened(opener, lasti))
        return held

    def _report(self, held: float, start: Started, ended: float, where: str) -> None:
        if held > self.slow:
            log.warning(
                "a write transaction held the writer for %d ms (opened at %s; over "
                "[database] slow_write_ms = %d): move work that is not SQL before it",
                held * 1000,
                where,
                self.slow * 1000,
            )
        if not _watchers or not start[1]:
            return
        collecting = _collected_within(start[0], ended)
        own = held - collecting
        waits = start[2]
        waited = waits.seconds if waits is not None else 0.0
        cpu = time.thread_time() - start[1] - collecting - waited
        for limit, callback in list(_watchers):
            if own > limit:
                callback(own, cpu, where)


class Slowest:
    """The unit of a batch of writes that took longest: the place a slow batch names."""

    __slots__ = ("unit", "seconds")

    def __init__(self, unit: Any):
        self.unit = unit
        self.seconds = -1.0

    def saw(self, unit: Any, seconds: float) -> None:
        """One unit ran for `seconds`."""
        if seconds > self.seconds:
            self.unit, self.seconds = unit, seconds


def where_opened(opener: Any, lasti: int = -1) -> str:
    """`path:line` of the code that opened a transaction (paths inside the project are
    relative to it): the first frame outside this package and contextlib, or a unit's
    function."""
    if isinstance(opener, Slowest):
        opener = opener.unit
    if isinstance(opener, FrameType):
        frame: FrameType | None = opener
        while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
            frame, lasti = frame.f_back, -1
        if frame is None:
            return "an unknown place"
        line = _line_at(frame.f_code, lasti) if lasti >= 0 else None
        return f"{_shown(frame.f_code.co_filename)}:{line or frame.f_lineno}"
    function = opener
    while isinstance(function, functools.partial):
        function = function.func
    code = getattr(function, "__code__", None)
    if code is None:
        return repr(opener)[:200]
    return f"{_shown(code.co_filename)}:{code.co_firstlineno} ({function.__qualname__})"


def _line_at(code: CodeType, lasti: int) -> int | None:
    """The source line of the instruction at byte offset `lasti`."""
    for index, (line, *_) in enumerate(code.co_positions()):
        if index * 2 >= lasti:
            return line
    return None


def _shown(path: str) -> str:
    return path[len(_ROOT) :] if path.startswith(_ROOT) else path
