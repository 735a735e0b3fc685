#!/usr/bin/env bash
# One runbook call that outlives the device tool's 10-minute commands: the first command starts
# bench/runbook.py in its own process session (so it survives the command's end) and every command,
# the first included, waits up to WAIT_S for it, then brings back call.log and results.tar.gz (every
# results directory the call has written so far, without Tune's checkpoints, packed anew each time).
# Call it again (within the machine's 30-second warm window) until it prints "lease call done";
# STOP=1 ends the call first (SIGTERM: the sweep in flight keeps its finished epochs) and collects.
#   source .devbundle/setup.sh && bash bench/lease.sh RUNBOOK CALL OUT      # CALL_S: the call's budget
set -uo pipefail
runbook=${1:?usage: bench/lease.sh RUNBOOK CALL OUT}; call=${2:?}; out=${3:?}
cd "$(dirname "$0")/.."
work=/tmp/lease-$call
mkdir -p "$work"
if [ ! -f "$work/pid" ]; then
  [ -d /tmp/cifar/train ] || { mkdir -p /tmp/cifar && tar -xzf .devdata/cifar10-jpg.tar.gz -C /tmp/cifar; }
  date +%s >"$work/started"
  CALL_S=${CALL_S:-1500} PYTHONUNBUFFERED=1 setsid nohup python bench/runbook.py "$runbook" "$call" "$work" \
    >"$work/runbook.out" 2>&1 </dev/null &
  echo $! >"$work/pid"
  echo "lease.sh: started runbook call $call (pid $!)"
fi
pid=$(cat "$work/pid")
if [ "${STOP:-0}" = 1 ] && kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"  # the runbook stops its step (SIGTERM to the sweep) and packs
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
fi
deadline=$((SECONDS + ${WAIT_S:-560}))
while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 5; done
# every results directory changed since the call started (the runbook packs only after a step ends)
dirs=$(find results -mindepth 1 -maxdepth 1 -type d -newer "$work/pid" -printf '%f\n' 2>/dev/null)
[ -n "$dirs" ] && tar -czf "$out/results.tar.gz" --exclude=.tune -C results $dirs
cp "$work"/call.log "$work"/runbook.out "$out"/ 2>/dev/null
tail -n 25 "$work/call.log" 2>/dev/null
if kill -0 "$pid" 2>/dev/null; then echo "lease.sh: still running"; else echo "lease call done"; fi
