#!/usr/bin/env bash
# Installs benchctl and runs the checks CI runs: ruff, then the whole pytest suite (real Ray, real torch).
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -q "$@"
