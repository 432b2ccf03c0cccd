#!/usr/bin/env bash
# Install what the tests need and run them, on both backends: first on SQLite (the
# default), then on PostgreSQL + Redis, servers this script starts on free 127.0.0.1 ports
# in a temporary directory and stops at the end. What the tests need is installed first,
# when missing (scripts/install_test_deps.sh: pip, Debian's packages, npm's).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/test_agents.py`.
# TEST_BACKENDS="sqlite" (or "postgresql") runs one backend only. Tests run in parallel on
# TEST_WORKERS pytest-xdist workers (default 4: more workers than cores pay, as tests wait
# on servers and timers, but each worker costs seconds of CPU to start and the browser
# tests, which run beside the workers, fill the waits too; 6 used 30 s more CPU for the
# same tests); TEST_WORKERS=0 runs them in this one process. The browser tests run beside
# the niced workers; TEST_OVERLAP=0 runs them after the workers instead (slower: the
# processor then idles while the browser tests wait).
set -euo pipefail
# Compiled modules (and pytest's rewritten test modules) are kept between runs and shared by
# the workers: without them every worker compiles the whole package and suite again.
unset PYTHONDONTWRITEBYTECODE
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
backends=${TEST_BACKENDS:-sqlite postgresql}

bash scripts/install_test_deps.sh  # pip, Debian's packages and npm's, when missing

workers=${TEST_WORKERS:-4}

# On workers, the suite runs in phases (tests/conftest.py): most tests on the workers and,
# at the same time, the browser tests in two processes of their own (run_tests below);
# then the tests that measure the machine, two at a time. Exit status 5 is pytest's "no test
# selected": a file list may hold none of a phase's tests.
run_tests() {
    if [ "$workers" = 0 ]; then
        python3 -m pytest -p no:cacheprovider "$@"
        return
    fi
    local status=0 code
    keep() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ] || status=$1; }
    local logs=() pids=() log
    browser_run() {  # phase, files...: in the background, its output kept for later
        log=$(mktemp)
        logs+=("$log")
        TEST_PHASE=$1 python3 -m pytest -p no:cacheprovider "${@:2}" >"$log" 2>&1 &
        pids+=($!)
    }
    # With no file list, two processes of about the same length: the widget's package
    # then the dashboard's first day (files 1 to 9, which build on each other, in order),
    # and the dashboard's later files (10 on, each standing alone, on a stack of its own).
    # They end a minute before the workers' tests, and the processor is busy throughout
    # (both cores, measured every 2 s), so more processes only cost their start: Python,
    # Playwright, Chromium and a stack, about 5 s of CPU each. Given files run in one
    # process per package.
    start_browsers() {
        if [ $# -eq 0 ]; then
            browser_run browser,browser_dashboard tests/browser tests/browser_dashboard/test_[1-9]_*.py
            browser_run browser_dashboard tests/browser_dashboard/test_[1-9][0-9]_*.py
        else
            browser_run browser "$@"
            browser_run browser_dashboard "$@"
        fi
    }
    wait_browsers() {
        local i
        for i in "${!pids[@]}"; do
            code=0
            wait "${pids[$i]}" || code=$?
            keep $code
            cat "${logs[$i]}"
            rm -f "${logs[$i]}"
        done
    }
    # The browser tests mostly wait (on Chromium, its timers, their stacks) while the
    # workers' tests keep the processor busy, so they run at the same time: the browser
    # processes at the normal priority, the workers niced, to take only the processor the
    # browsers leave idle. (With the full Chromium, pages were now and then drawn after
    # Playwright's 5 s; the headless shell takes half the processor, and assertions wait
    # up to 10 s: tests/support/chromium.py.)
    if [ "${TEST_OVERLAP:-1}" = 1 ]; then
        echo "-- the browser tests in the background, beside the tests on the workers (niced) [${SECONDS}s]"
        start_browsers "$@"
        code=0
        TEST_PHASE=parallel nice -n 10 python3 -m pytest -p no:cacheprovider -n "$workers" "$@" ||
            code=$?
        keep $code
        echo "-- the browser tests: the widget's and the dashboard's [${SECONDS}s]"
        wait_browsers
    else
        code=0
        TEST_PHASE=parallel python3 -m pytest -p no:cacheprovider -n "$workers" "$@" || code=$?
        keep $code
        echo "-- the browser tests: the widget's and the dashboard's, side by side [${SECONDS}s]"
        start_browsers "$@"
        wait_browsers
    fi
    echo "-- the tests that measure the machine, two at a time (one per core) [${SECONDS}s]"
    # With no file list, only the files that mark a test needs_the_machine are collected.
    # Each takes about one core (a server and its load in one process, or a server and a
    # control server that tells the machine's noise from the server's), so two workers on
    # 2 cores measure what one did alone: 30 s instead of 52.
    local measuring
    mapfile -t measuring < <(grep -rl --include='test_*.py' needs_the_machine tests)
    code=0
    TEST_PHASE=alone python3 -m pytest -p no:cacheprovider -n 2 "${@:-${measuring[@]}}" || code=$?
    keep $code
    return $status
}

# One zygote for every test process of the run: `agentsvc serve` and the other commands the
# tests run as processes fork from it with the package loaded (tests/support/warm.py), and a
# zygote costs 2 s of CPU to load. It exits when this script does (its stdin ends).
zygote_dir=$(mktemp -d)
exec {zygote_stdin}> >(exec python3 tests/support/zygote.py "$zygote_dir/s" >"$zygote_dir/ready")
for _ in $(seq 600); do [ -s "$zygote_dir/ready" ] && break; sleep 0.05; done
[ -s "$zygote_dir/ready" ] || { echo "the tests' zygote did not start" >&2; exit 1; }
export TEST_ZYGOTE_SOCKET="$zygote_dir/s"

# Each pass says what it cost the machine: its seconds, the processor seconds all of the
# machine was busy meanwhile (/proc/stat), and how long a fixed loop of Python took at the
# start, so passes on days of different speed can be compared.
busy_seconds() {
    local _ user nice system idle iowait irq softirq steal
    read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}
tick=$(getconf CLK_TCK)
reference=$(python3 -c 'import time
t = time.process_time(); sum(i * i for i in range(10**7)); print(f"{time.process_time() - t:.2f}")')
echo "== the machine: a fixed loop of Python (sum of squares to 10^7) took ${reference} s"
measured() {  # name, then the command
    local name=$1 began=$SECONDS busy code=0
    busy=$(busy_seconds)
    "${@:2}" || code=$?
    echo "== the $name pass: $((SECONDS - began)) s, $((($(busy_seconds) - busy) / tick)) s of" \
        "the machine's processor time (the fixed loop: ${reference} s)"
    return $code
}

status=0
for backend in $backends; do
    if [ "$backend" = sqlite ]; then
        echo "== tests on SQLite [${SECONDS}s]"
        measured SQLite run_tests "$@" || status=$?
    else
        echo "== tests on PostgreSQL + Redis [${SECONDS}s]"
        (
            eval "$(bash scripts/test_servers.sh start)"
            trap 'bash scripts/test_servers.sh stop "$TEST_SERVERS_DIR"' EXIT
            TEST_REQUIRE_REDIS=1 measured "PostgreSQL + Redis" run_tests "$@"
        ) || status=$?
    fi
done
echo "== tests done [${SECONDS}s]"
exit $status
