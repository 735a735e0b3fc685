"""Reference runs declared as data: a YAML runbook names each device call's steps; this runs one call.

    python bench/runbook.py reports/h200-compile/runbook.yaml gpu-128 "$OUT"

A runbook maps call names to step lists. Each step is one of

    sweep:    {name: NAME, args: "--devices gpu ...", guard_s: 300}   benchctl sweep --out results
    fidelity: {name: NAME, args: "--compile on ...", guard_s: 150}    bench/fidelity.py results/NAME
    plain:    {name: LABEL, args: "--model ...", guard_s: 60}         bench/plain_loop.py, JSON lines
    script:   {name: NAME, args: "bench/x.py --out results/NAME"}     python ARGS; results/NAME is packed

A step with `required: true` must exit 0, or the call stops there (a smoke test the rest depends on).
Steps run in order, each under its own time guard and the call's (CALL_S, default 560 s, for the device tool's
10-minute limit): a step that would start with less than `min_s` (default 30 s) left is skipped and said
so. A sweep cut by its guard gets SIGTERM and keeps every finished epoch. OUT holds call.log (everything
printed) and results.tar.gz (the results directories the call wrote, without Tune's files), packed
after every step and when the call itself gets SIGTERM, so a call cut short keeps what finished.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "sweep": lambda name, args: [
        sys.executable, "-m", "orchestrator", "sweep", "--out", "results", "--name", name, *args
    ],
    "fidelity": lambda name, args: [sys.executable, "bench/fidelity.py", f"results/{name}", *args],
    "plain": lambda name, args: [sys.executable, "bench/plain_loop.py", *args],
    "script": lambda name, args: [sys.executable, *args],
}  # fmt: skip
PROBES = (
    ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit", "--format=csv"],
    ["nproc"],
)


def main(argv: list[str]) -> int:
    runbook, call, out = Path(argv[0]), argv[1], Path(argv[2])
    steps = yaml.safe_load(runbook.read_text())["calls"][call]
    budget = float(os.environ.get("CALL_S", 560))
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "call.log").open("a", encoding="utf-8")

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    for probe in PROBES:
        try:
            say(subprocess.run(probe, capture_output=True, text=True).stdout.strip())
        except OSError:
            say(f"({probe[0]} not found)")
    written: list[str] = []
    # The device tool ends a call that outlives its time with SIGTERM: stop the step, pack what is done.
    before = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        _run_steps(steps, budget, started, written, out, say)
    finally:
        _pack(out / "results.tar.gz", written)
        signal.signal(signal.SIGTERM, before)
    say(f"call {call}: {time.monotonic() - started:.0f} s")
    return 0


def _run_steps(steps, budget: float, started: float, written: list[str], out: Path, say) -> None:
    for step in steps:
        ((kind, body),) = ((k, v) for k, v in step.items() if k in KINDS)
        left = budget - (time.monotonic() - started)
        guard = min(float(body.get("guard_s", left)), left)
        if guard < float(body.get("min_s", 30)):
            say(f"== {kind} {body['name']}: skipped, {left:.0f} s left in the call")
            continue
        if kind in ("sweep", "script") and body["name"] not in written:
            written.append(body["name"])
        cmd = KINDS[kind](body["name"], shlex.split(body.get("args", "")))
        say(f"== {kind} {body['name']} (guard {guard:.0f} s): {shlex.join(cmd)}")
        t0 = time.monotonic()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, **pipe)
        try:
            for line in _lines(proc, t0 + guard):
                say(line)
        finally:
            if proc.poll() is None:
                proc.terminate()  # a sweep takes SIGTERM as Ctrl-C: finished epochs stay on disk
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rc = proc.wait()
            say(f"== {kind} {body['name']}: exit {rc} after {time.monotonic() - t0:.0f} s")
        _pack(out / "results.tar.gz", written)
        if rc != 0 and body.get("required"):
            say(f"== {kind} {body['name']} is required: the call stops here")
            break


def _pack(path: Path, names: list[str]) -> None:
    """Tar the named results directories to `path` (atomically): after every step, so a call that the
    device tool cuts short still brings back every step that finished."""
    part = path.with_suffix(".part")
    with tarfile.open(part, "w:gz") as tar:
        for name in names:
            if (ROOT / "results" / name).is_dir():
                tar.add(ROOT / "results" / name, arcname=name, filter=_no_tune)
    part.replace(path)


def _lines(proc: subprocess.Popen, deadline: float):
    """The process's output lines until it ends or the deadline passes (then the caller stops it)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=min(left, 1.0))
        except queue.Empty:
            continue
        if line is None:
            return
        yield line
    yield f"(guard reached: stopping pid {proc.pid})"


def _no_tune(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "/.tune" in info.name or info.name.endswith(".tune") else info


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
