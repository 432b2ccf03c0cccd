#!/usr/bin/env bash
# Install the project with its test and docs extras (editable), unless this interpreter
# already has exactly that: the same pyproject.toml installed from this directory. pip
# takes about 15 s to find that nothing changed, and .ci/run and scripts/test.sh both
# need the install; the stamp (build/, ignored by git) remembers the last one.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
stamp=build/dev-install.stamp
want="$(command -v python3) $(sha256sum pyproject.toml | cut -d' ' -f1) $PWD"
# Asked from / : from here, the checkout's own agentsvc/ would answer, installed or not.
here=$(cd / && python3 -c 'import agentsvc.cli, pathlib; print(pathlib.Path(agentsvc.cli.__file__).resolve().parent.parent)' 2>/dev/null || true)
if [ "$here" = "$PWD" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
python3 -m pip install -q -e '.[test,docs]'
mkdir -p build
echo "$want" > "$stamp"
