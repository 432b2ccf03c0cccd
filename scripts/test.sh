#!/usr/bin/env bash
# Install what the tests need and run them: the project with its test extras (pip), and
# Debian's Chromium for the browser tests (never Playwright's own browser download).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh tests/test_agents.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

python3 -m pip install -q -e '.[test]'
if [ ! -x /usr/bin/chromium ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium
fi
exec python3 -m pytest -p no:cacheprovider "$@"
