#!/usr/bin/env bash
# The paper's study at full length on the H200 host: `--preset paper` on real CIFAR-10 (JPEG export),
# 10 epochs per cell, no step caps. One sweep, continued across device calls with --resume: each call
# stops the sweep (SIGTERM) before the device tool's 10-minute limit, and the next call continues every
# cut trial from its last epoch checkpoint, which stays on the machine's disk while it is warm.
# On the GPU machine, from the project root (.devbundle and .devdata carried):
#   bash reports/h200-paper/run.sh "$OUT"       # again and again until it prints "sweep complete"
# Leaves OUT/results.tar.gz (the results directory without Tune's checkpoints) and OUT/call.log.
set -uo pipefail
out=${1:?usage: reports/h200-paper/run.sh OUT_DIR}
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
log=$out/call.log
{
  if [ -d /tmp/site/ray ]; then  # a warm machine keeps what the last call installed
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
  else
    source .devbundle/setup.sh
  fi
  [ -d /tmp/cifar/train ] || { mkdir -p /tmp/cifar && tar -xzf .devdata/cifar10-jpg.tar.gz -C /tmp/cifar; }
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  args=(--preset paper --dataset folder:/tmp/cifar --out results --name h200-paper)
  [ -f results/h200-paper/spec.json ] && args+=(--resume)
  # SIGTERM ends a sweep like Ctrl-C (exit 130): finished epochs and checkpoints are already on disk
  timeout -s TERM $((${CALL_S:-560} - SECONDS)) python -m orchestrator sweep "${args[@]}"
  code=$?
  echo "sweep exit status: $code"
  [ "$code" = 0 ] && echo "sweep complete"
} 2>&1 | tee -a "$log"
tar -czf "$out/results.tar.gz" --exclude=.tune -C results h200-paper
