#!/usr/bin/env bash
# Installs benchctl, runs a quick local sweep on synthetic data and writes its report (~2 minutes on 2 cores).
#   bash scripts/quickstart.sh            # results in results/quickstart-<time>/, report in .../report/
# On a machine with a GPU, add gpu: DEVICES=cpu,gpu bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
name="quickstart-$(date +%Y%m%d-%H%M%S)"
.venv/bin/benchctl sweep --models simple_cnn,resnet18 --devices "${DEVICES:-cpu}" --dataset synthetic \
  --epochs 2 --max-steps 3 --batch-size 32 --train-size 4096 --test-size 1024 --name "$name"
.venv/bin/benchctl report "results/$name"
