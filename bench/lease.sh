#!/usr/bin/env bash
# One runbook call that outlives the device tool's 10-minute commands: the first command starts
# bench/runbook.py in its own process session (so it survives the command's end) and every command,
# the first included, waits up to WAIT_S for it, then copies its call.log and results.tar.gz to OUT.
# Call it again (within the machine's warm window) until it prints "lease call done".
#   source .devbundle/setup.sh && bash bench/lease.sh RUNBOOK CALL OUT      # CALL_S: the call's budget
set -uo pipefail
runbook=${1:?usage: bench/lease.sh RUNBOOK CALL OUT}; call=${2:?}; out=${3:?}
cd "$(dirname "$0")/.."
work=/tmp/lease-$call
mkdir -p "$work"
if [ ! -f "$work/pid" ]; then
  [ -d /tmp/cifar/train ] || { mkdir -p /tmp/cifar && tar -xzf .devdata/cifar10-jpg.tar.gz -C /tmp/cifar; }
  CALL_S=${CALL_S:-1500} PYTHONUNBUFFERED=1 setsid nohup python bench/runbook.py "$runbook" "$call" "$work" \
    >"$work/runbook.out" 2>&1 </dev/null &
  echo $! >"$work/pid"
  echo "lease.sh: started runbook call $call (pid $!)"
fi
pid=$(cat "$work/pid")
deadline=$((SECONDS + ${WAIT_S:-560}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
cp "$work"/call.log "$work"/results.tar.gz "$work"/runbook.out "$out"/ 2>/dev/null
tail -n 25 "$work/call.log" 2>/dev/null
if kill -0 "$pid" 2>/dev/null; then echo "lease.sh: still running"; else echo "lease call done"; fi
