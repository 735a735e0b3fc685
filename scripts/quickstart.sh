#!/usr/bin/env bash
# Installs benchctl, runs the README's first example (simple_cnn on synthetic data, 4 epochs of 5,000 images:
# ~2 minutes on 2 CPU cores) and writes its report, each number with a 95% interval (3 steady epochs).
#   bash scripts/quickstart.sh            # results in results/quickstart-<time>/, report in .../report/
# Where a node has a GPU the sweep also runs the gpu cell, and the report shows the speedup; to choose the
# devices yourself: DEVICES=cpu,gpu bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
name="quickstart-$(date +%Y%m%d-%H%M%S)"
.venv/bin/benchctl sweep --models simple_cnn ${DEVICES:+--devices "$DEVICES"} --dataset synthetic \
  --epochs 4 --train-size 5000 --test-size 1000 --name "$name"
.venv/bin/benchctl report "results/$name"
ran=$(.venv/bin/python -c 'import json, sys; print(*json.load(open(sys.argv[1]))["spec"]["devices"])' "results/$name/spec.json")
if [[ " $ran " != *" gpu "* ]]; then
  echo "quickstart: CPU only (no GPU found here). For a GPU-vs-CPU speedup, run it on a machine with an NVIDIA GPU:"
  echo "  DEVICES=cpu,gpu bash scripts/quickstart.sh    # or: benchctl sweep --devices cpu,gpu ..."
fi
