#!/usr/bin/env bash
# Build the dashboard's bundle: agentsvc/static/dashboard/app.js and every module it imports
# into one minified script, and app.css minified, with esbuild (from the npm registry into
# tests/browser/node_modules by scripts/install_test_deps.sh; nothing is fetched here). The
# output is committed: agentsvc/static/dashboard/bundle/{app.js,app.css,manifest.json}, the
# manifest naming a digest of the sources it was built from. The server sends the bundle
# while that digest matches the sources, else the sources themselves (api/dashboard.py);
# tests/test_dashboard_budget.py fails on a stale bundle. Run it after editing the dashboard.
# Usage: scripts/build_dashboard.sh [OUTPUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/agentsvc/static/dashboard
out=$(realpath -m "${1:-$src/bundle}")
esbuild=$root/tests/browser/node_modules/.bin/esbuild
if [ ! -x "$esbuild" ]; then
    echo "esbuild is missing: run scripts/install_test_deps.sh (or npm install --prefix tests/browser)" >&2
    exit 1
fi
# The browsers whose syntax the output may use (esbuild adds no newer syntax than they read,
# and the CSS prefixes they still need); the sources are written for them as they are.
target=chrome111,edge111,firefox114,safari16.4

# The digest of the sources (every top-level script and sheet): sha256sum's lines for them in
# byte order, digested again. The server computes the same (api/dashboard.py source_digest).
digest=$(cd "$src" && printf '%s\n' *.js *.css | LC_ALL=C sort | xargs sha256sum | sha256sum)
mkdir -p "$out"
rm -f "$out/manifest.json"  # written last: a half-built bundle is never taken as current
common=(--minify "--target=$target" --charset=utf8 --legal-comments=none --log-level=warning)
"$esbuild" "$src/app.js" --bundle --format=esm "${common[@]}" --outfile="$out/app.js"
"$esbuild" "$src/app.css" "${common[@]}" --outfile="$out/app.css"
printf '{"sources": "%s", "esbuild": "%s"}\n' "${digest%% *}" "$("$esbuild" --version)" \
    >"$out/manifest.json"
