"""Worker threads for CPU-bound work on what tenants send (schemas, MCP listings, inputs),
and for the one import too heavy for the event loop (the MCP SDK: `load_modules`).

Such work holds a CPU, and the GIL, while it computes. In the loop's default executor it
would compete as an equal with the event loop's thread, and every request of every other
team would queue behind it. Here it runs in threads NICER_BY steps below the process's own
priority (Linux: nice, set per thread), so on a shared core the kernel gives the loop's
thread about nine times their time; the checks themselves pause every half millisecond of
work (services/tenant_input/schemas.py), so the loop gets the GIL too. Not the lowest
priority: behind other processes' work (a database, a build; on CI the browsers and the
fuzzer) a thread at nice 19 waited seconds for a CPU while holding the GIL, the loop
waiting on it, and an MCP listing passed its 30 s timeout. Measured beside a busy process
at nice 0 and two at nice 19 (the suite's alone phase beside the fuzzer): an MCP refresh of
12 hostile tools 2.6 s at nice 19, 1.2-1.5 s at 10 steps, 1.0-1.2 s at 3; another team's
chat p99 while two teams loop the 60 KB anyOf update 6-8 ms, 14-26 ms, 30-32 ms (and in
scripts/bench_write_hold.py, pinned to one core, 14.7, 17.1 and 18.4 ms). A dashboard MCP
listing beside four busy processes (the browser tests beside the niced workers): 19.9 s at
nice 19, 11-14 s at 10 steps. At most MAX_WORKERS run at once; more wait their turn.
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
NICER_BY = 10  # nice steps below the process's own


def _lower_priority() -> None:
    if sys.platform.startswith("linux"):  # elsewhere the priority is the whole process's
        try:
            niceness = min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICER_BY)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        except OSError:
            pass


# One pool for the process (as the argon2 one in passwords.py): its threads start on
# first use and end with the interpreter.
_executor = ThreadPoolExecutor(
    MAX_WORKERS, thread_name_prefix="agentsvc-cpu", initializer=_lower_priority
)


async def run(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a low-priority worker thread (as asyncio.to_thread does:
    the caller's context variables go along)."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(_executor, call)


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
