"""Worker threads for CPU-bound work on what tenants send (schemas, MCP listings, inputs),
and for the one import too heavy for the event loop (the MCP SDK: `load_modules`).

Such work holds a CPU, and the GIL, while it computes. In the loop's default executor it
would compete as an equal with the event loop's thread, and every request of every other
team would queue behind it. Here the checks run in threads of the lowest scheduling
priority (Linux: nice 19, set per thread), so the kernel runs the loop's thread first
whenever it has work; the checks themselves pause every half millisecond of work
(services/tenant_input/schemas.py), so the loop gets the GIL too. An MCP listing (the
SDK's import, the transfer, the SDK's validation and the checks of every listed schema, all
within the listing's budgets) runs EXCHANGE_NICER_BY steps below the process instead: the
exchange has a timeout (30 s), and at nice 19 behind other processes' work (a
database; on CI the browsers and the fuzzer) it waited seconds for a CPU while holding the
GIL. Measured beside busy processes: a dashboard MCP listing 19.9 s at nice 19, 11-14 s 10
steps below; with every worker 10 steps below, another team's chat p99 while two teams loop
the 60 KB anyOf update reached 195 ms on a busy machine (6-8 ms quietly at nice 19), so the
checks stay at the lowest. At most MAX_WORKERS run at once; more wait their turn.
Bounded work only: each check has a step budget.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

MAX_WORKERS = 4
LOWEST = 19  # nice: the checks of what tenants send
EXCHANGE_NICER_BY = 10  # nice steps below the process's own: MCP exchanges


def _priority(nicer_by: int) -> Callable[[], None]:
    def lower() -> None:
        if sys.platform.startswith("linux"):  # elsewhere the priority is the whole process's
            try:
                niceness = min(LOWEST, os.getpriority(os.PRIO_PROCESS, 0) + nicer_by)
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
            except OSError:
                pass

    return lower


# One pool of each for the process (as the argon2 one in passwords.py): their threads start
# on first use and end with the interpreter.
_checks = ThreadPoolExecutor(
    MAX_WORKERS, thread_name_prefix="agentsvc-cpu", initializer=_priority(LOWEST)
)
_exchanges = ThreadPoolExecutor(
    MAX_WORKERS, thread_name_prefix="agentsvc-mcp", initializer=_priority(EXCHANGE_NICER_BY)
)


async def run(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a worker thread at the lowest priority (as asyncio.to_thread
    does: the caller's context variables go along)."""
    return await _in(_checks, fn, *args, **kwargs)


async def exchange(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a worker thread EXCHANGE_NICER_BY steps below the process:
    an MCP listing and its checks, which must end within the timeout however busy the
    machine is."""
    return await _in(_exchanges, fn, *args, **kwargs)


async def _in(pool: ThreadPoolExecutor, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(pool, call)


async def load_modules(*names: str) -> None:
    """Import modules in a worker thread, once: the MCP SDK's client or server side costs
    1.3-1.5 s of CPU to import, and imported on the event loop (on the first MCP exchange)
    it stalled every other request that long. The thread has the caller's priority: an
    import cannot pause to hand the GIL over, and at a lower priority on a busy machine it
    held the GIL while the kernel ran others, the loop waiting on it (1.3 s again)."""
    missing = [name for name in names if name not in sys.modules]
    if missing:
        await asyncio.to_thread(_import_all, missing)


def _import_all(names: list[str]) -> None:
    for name in names:
        importlib.import_module(name)
