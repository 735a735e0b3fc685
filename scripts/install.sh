#!/usr/bin/env bash
# Creates .venv (git-ignored) and installs benchctl with its test tools (and, as root, Debian's chromium
# for the report.html screenshot test). Idempotent.
#   bash scripts/install.sh
# TORCH_SPEC overrides the torch pin; on x86_64 the lab image serves torch 2.14.1 / torchvision 0.29.1
# from local disk (a CUDA build that also runs on CPU-only machines).
# Nothing is reinstalled when .venv was installed from the same pyproject.toml, install.sh and TORCH_SPEC
# (a stamp in .venv); delete .venv/.benchctl-install to force it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.benchctl-install
want=$(cat pyproject.toml scripts/install.sh | sha256sum | cut -d' ' -f1)-${TORCH_SPEC:-default}
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "benchctl env: .venv is up to date (same pyproject.toml and install.sh); rm $stamp to reinstall"
    exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "$(uname -m)" = "x86_64" ]; then default_torch="torch==2.14.1 torchvision==0.29.1"; else default_torch="torch torchvision"; fi
# shellcheck disable=SC2086  # the spec is a list of requirements
.venv/bin/python -m pip install -q ${TORCH_SPEC:-$default_torch}
.venv/bin/python -m pip install -q -e '.[test]'
# Headless Chromium (Debian's `chromium`) lets tests/test_html.py screenshot report.html; that test is
# skipped without it. Installed only as root with apt-get; the package list is refreshed only when it has no
# candidate for chromium (an empty or stale list) or the install fails (retried once after an update).
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt_install() { apt-get install -y -q --no-install-recommends chromium >/dev/null; }
        if ! apt-cache policy chromium 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
            apt-get update -q >/dev/null || true
        fi
        apt_install || { apt-get update -q >/dev/null && apt_install; } \
            || echo "warning: could not install chromium; the report.html screenshot test will be skipped" >&2
    else
        echo "note: chromium not found; the report.html screenshot test will be skipped (as root: apt-get install chromium)"
    fi
fi
.venv/bin/python -c 'import torch, torchvision, ray; print("benchctl env: torch", torch.__version__, "torchvision", torchvision.__version__, "ray", ray.__version__)'
echo "$want" > "$stamp"
