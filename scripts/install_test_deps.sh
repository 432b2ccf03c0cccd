#!/usr/bin/env bash
# Install what the tests need, when missing: the project with its test and docs extras
# (pip; tests/test_docs.py builds the site); Debian's Chromium headless shell, xmlsec1
# (SAML signatures), LibreOffice Calc (headless, for the CSV export check), Dovecot (IMAP,
# for the e-mail channel), an emoji font and, for the PostgreSQL pass, Redis, nginx and
# PostgreSQL, and iproute2 for the cluster of hosts (never Playwright's own browser download);
# axe-core, esbuild and oidc-provider from the npm registry. The storage tests' S3 server is
# moto's (`moto[server]`, a test extra from PyPI): SeaweedFS's `seaweedfs-bin` is packaged
# from Debian 13 on, not in this Debian 12. scripts/test.sh runs it first;
# .ci/run runs it before starting the fuzzer, so nothing installs beside the tests.
# TEST_BACKENDS as for scripts/test.sh ("sqlite" needs no database servers).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
backends=${TEST_BACKENDS:-sqlite postgresql}

bash scripts/install_dev.sh
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
[ -x /usr/lib/chromium/chromium-headless-shell ] || missing+=(chromium-headless-shell)
command -v xmlsec1 >/dev/null || missing+=(xmlsec1)  # SAML signatures (pysaml2)
command -v soffice >/dev/null || missing+=(libreoffice-calc-nogui)
[ -x /usr/sbin/dovecot ] || missing+=(dovecot-imapd)  # the e-mail channel's IMAP server
# An emoji font: the dashboard's 👍 and 👎, drawn in the owners' docs pictures
[ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || missing+=(fonts-noto-color-emoji)
if [[ $backends == *postgresql* ]]; then
    [ -x /usr/bin/redis-server ] || missing+=(redis-server)
    [ -x /usr/sbin/nginx ] || missing+=(nginx)
    ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
    command -v ip >/dev/null || missing+=(iproute2)  # tests/test_hosts.py's namespaces
fi
if [ ${#missing[@]} -gt 0 ]; then
    $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# axe-core for the accessibility tests and esbuild, which builds the dashboard's bundle
# (scripts/build_dashboard.sh; the budget test builds one too), from the npm registry (never
# committed): tests/browser/package.json names them (esbuild within its 0.x minor version,
# whose releases may change its options).
if [ ! -f tests/browser/node_modules/axe-core/axe.min.js ] ||
    [ ! -x tests/browser/node_modules/.bin/esbuild ]; then
    command -v npm >/dev/null || { $sudo apt-get update -qq && $sudo apt-get install -y -qq npm >/dev/null; }
    npm install --prefix tests/browser --no-audit --no-fund --no-package-lock --loglevel=error
fi
# The certified OpenID provider the single sign-on tests sign in through, likewise from the
# npm registry (never committed): tests/support/oidc/package.json names it with a lower bound.
if [ ! -f tests/support/oidc/node_modules/oidc-provider/package.json ]; then
    command -v npm >/dev/null || { $sudo apt-get update -qq && $sudo apt-get install -y -qq npm >/dev/null; }
    npm install --prefix tests/support/oidc --no-audit --no-fund --no-package-lock --loglevel=error
fi
