#!/usr/bin/env bash
# Creates .venv (git-ignored) and installs benchctl with its test tools. Idempotent.
#   bash scripts/install.sh
# TORCH_SPEC overrides the torch pin; on x86_64 the lab image serves torch 2.14.1 / torchvision 0.29.1
# from local disk (a CUDA build that also runs on CPU-only machines).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "$(uname -m)" = "x86_64" ]; then default_torch="torch==2.14.1 torchvision==0.29.1"; else default_torch="torch torchvision"; fi
# shellcheck disable=SC2086  # the spec is a list of requirements
.venv/bin/python -m pip install -q ${TORCH_SPEC:-$default_torch}
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/python -c 'import torch, torchvision, ray; print("benchctl env: torch", torch.__version__, "torchvision", torchvision.__version__, "ray", ray.__version__)'
