#!/usr/bin/env bash
# The H200 reference runs, one device call per step (each fits the device tool's 10-minute limit).
# On the GPU machine, from the project root, with Ray from the device bundle:
#   source .devbundle/setup.sh && bash reports/h200/h200.sh fidelity-small "$OUT"   # simple_cnn, resnet18: gpu
#   source .devbundle/setup.sh && bash reports/h200/h200.sh fidelity-large "$OUT"   # resnet50: gpu
#   source .devbundle/setup.sh && bash reports/h200/h200.sh diag "$OUT"             # where a fidelity gap comes from
#   source .devbundle/setup.sh && bash reports/h200/h200.sh fidelity-pinned "$OUT"  # pinned cores on both sides
#   source .devbundle/setup.sh && bash reports/h200/h200.sh fidelity-cpu "$OUT"     # cpu cells; resnet50 gpu ref
#   source .devbundle/setup.sh && bash reports/h200/h200.sh repeats "$OUT"          # 3 repeats cpu+gpu: CIs, parity
#   source .devbundle/setup.sh && bash reports/h200/h200.sh fidelity-pairs "$OUT"   # benchctl / plain alternated
#   source .devbundle/setup.sh && bash reports/h200/h200.sh reference-a "$OUT"      # reference, child-process trials:
#   source .devbundle/setup.sh && bash reports/h200/h200.sh reference-b "$OUT"      #   a and b together cover it all
#   source .devbundle/setup.sh && bash reports/h200/h200.sh epoch-length "$OUT"     # 12,500 vs 50,000-image epochs
#   source .devbundle/setup.sh && bash reports/h200/h200.sh x2 "$OUT"   # kind nvidia-h200-x2: GPU cells side by side
# Each step leaves OUT/<step>.tar.gz (results directories incl. fidelity JSON) and OUT/<step>.log.
# Fidelity cells use 25,000 training images and 4 epochs (3 steady) so that benchctl, the plain loop
# (twice, round-robin) and benchctl's loop without Ray all fit one call. That assumes images/s does not
# depend on the epoch length past warm-up; the epoch-length step tests it (reports/h200/README.md says why).
set -uo pipefail
step=$1
out=${2:?usage: reports/h200/h200.sh STEP OUT_DIR}
res=$out/$step
mkdir -p "$res"
log=$out/$step.log
export PYTHONUNBUFFERED=1
bc() { python -m orchestrator sweep --out "$res" "$@"; }
fid() { timeout "$1" python bench/fidelity.py "${@:2}"; }
# a sweep cut by its time guard gets SIGTERM, exits 130 and keeps every finished trial, so the tar at the
# end always runs inside the device tool's 10-minute limit
bcg() { timeout "$1" python -m orchestrator sweep --out "$res" "${@:2}"; }
# seconds left before the call must tar its results (the device tool stops a command at 600 s)
left() { echo $((${CALL_S:-570} - SECONDS)); }
# the reference matrix: GPU cells, 3 full epochs (50,000 images); CPU cells 2 epochs of a few steps, extrapolated
ref_gpu() { bcg "$1" --name "$2" --devices gpu --pipeline loader,resident --epochs 3 "${@:3}"; }
ref_cpu() { bcg "$1" --name "$2" --devices cpu --pipeline loader,resident --models simple_cnn,resnet18,resnet50 \
  --epochs 2 --max-eval-steps 4 "${@:3}"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  nproc
  case $step in
    fidelity-small)
      bc --name fid-gpu-small --models simple_cnn,resnet18 --devices gpu --pipeline loader,resident \
        --batch-size 128 --epochs 4 --train-size 25000
      fid 330 "$res/fid-gpu-small" --device gpu --plain-repeats 2 --direct
      ;;
    diag)  # why GPU cells missed the bar: the plain loop bare, with Ray's OMP_NUM_THREADS, inside a bare
      # Ray task, then benchctl, then the plain loop again (drift), per cell
      P="python bench/plain_loop.py --device gpu --batch-size 128 --epochs 4 --train-size 25000"
      for cell in "simple_cnn loader 2" "resnet18 resident 0"; do
        set -- $cell
        A="--model $1 --pipeline $2 --workers $3 --threads 1"
        echo "== diag plain $1 $2"; $P $A
        echo "== diag plain-omp$((1 + $3)) $1 $2"; OMP_NUM_THREADS=$((1 + $3)) $P $A
        echo "== diag ray-task $1 $2"; python reports/h200/ray_plain.py --cpus $((1 + $3)) --gpus 1 -- \
          --device gpu --batch-size 128 --epochs 4 --train-size 25000 $A
        bc --name "diag-$1-$2" --models "$1" --devices gpu --pipeline "$2" --batch-size 128 --epochs 4 \
          --train-size 25000
        echo "== diag plain-again $1 $2"; $P $A
      done
      ;;
    fidelity-pinned)  # next session: trials pinned to their cores (partitioned), the plain loop on the same
      # cores, three plain runs per cell round-robin: takes the host's scheduling out of the comparison
      bc --name fid-pinned --models simple_cnn,resnet18 --devices gpu --pipeline loader,resident \
        --batch-size 128 --epochs 4 --train-size 25000 --placement partitioned
      fid 330 "$res/fid-pinned" --device gpu --plain-repeats 3
      ;;
    fidelity-large)  # resnet50 on the GPU against the plain loop
      bc --name fid-gpu-large --models resnet50 --devices gpu --pipeline loader,resident \
        --batch-size 128 --epochs 4 --train-size 25000
      fid 200 "$res/fid-gpu-large" --device gpu --plain-repeats 2
      ;;
    fidelity-cpu)  # the CPU cells against the plain loop, then the GPU reference cells still missing
      bc --name fid-cpu --models simple_cnn,resnet18,resnet50 --devices cpu --pipeline loader,resident \
        --batch-size 128 --epochs 3 --max-steps 20 --max-eval-steps 2
      fid 170 "$res/fid-cpu" --device cpu --plain-repeats 1
      bc --name ref-gpu-r50-loader --models resnet50 --devices gpu --pipeline loader --batch-size 128,512 \
        --epochs 3
      bc --name ref-gpu-r50-resident --models resnet50 --devices gpu --pipeline resident --batch-size 512 \
        --epochs 3
      ;;
    repeats)  # issue 4: speedup CIs and accuracy parity from 3 repeats of each cell on CPU and GPU, then
      # the plain loop twice per GPU cell (benchctl's side pools its 3 repeats)
      bcg 430 --name repeats --models simple_cnn,resnet18 --devices cpu,gpu --pipeline resident \
        --batch-size 128 --repeats 3 --epochs 3 --train-size 20000 --test-size 5000
      fid 110 "$res/repeats" --device gpu --plain-repeats 2
      ;;
    fidelity-pairs)  # B P B P B P: each benchctl sweep followed at once by the plain loop on its cells;
      # bench/fidelity_pairs.py then judges the per-round ratios; a round starts only if it fits the call.
      # PAIR_DEVICE=cpu with SWEEP_ARGS="--max-steps 20 --max-eval-steps 2" pairs the CPU cells instead
      r=0
      while [ $r -lt "${ROUNDS:-3}" ] && [ $SECONDS -lt "${LAST_ROUND_START_S:-370}" ]; do
        r=$((r + 1))
        bcg 200 --name "pair-r$r" --models simple_cnn,resnet18 --devices "${PAIR_DEVICE:-gpu}" \
          --pipeline loader,resident --batch-size 128 --epochs 3 --train-size 12500 ${SWEEP_ARGS:-}
        fid 100 "$res/pair-r$r" --device "${PAIR_DEVICE:-gpu}" --plain-repeats 1
      done
      python bench/fidelity_pairs.py "$res"/pair-r* --out "$res/fidelity-pairs.json"
      ;;
    reference-a)  # the reference sweep again with the loop in a child process (the default since 809e442)
      ref_gpu 330 ref-gpu-small --models simple_cnn,resnet18 --batch-size 128,512
      ref_cpu "$(left)" ref-cpu-128 --batch-size 128 --max-steps 30
      ;;
    reference-b)
      ref_gpu 300 ref-gpu-r50 --models resnet50 --batch-size 128,512
      ref_cpu "$(left)" ref-cpu-512 --batch-size 512 --max-steps 12
      ;;
    epoch-length)  # simple_cnn's GPU cells with 12,500- and 50,000-image epochs, alternated, to tell an
      # epoch-length effect from the host's state (see reports/h200/README.md). Guards from 2026-12-03's
      # call, whose n/400+30 s cut every sweep after 1-3 of 4 trials: a trial costs ~25 s before its first
      # epoch (Ray, the child process, cuDNN warm-up) and the loader cell ran at ~8k images/s then
      for r in 1 2; do
        for n in 12500 50000; do
          bcg $((n / 500 + 70)) --name "len$n-r$r" --models simple_cnn --devices gpu \
            --pipeline loader,resident --batch-size 128 --epochs 3 --train-size $n
        done
      done
      ;;
    x2)  # issue 7 (2 GPUs): the small GPU cells alone (Ray shown one GPU), side by side, alone again;
      # partitioned so that every trial pins and records its cores; reports/h200/multi_gpu.py judges the rows
      nvidia-smi -L; env | grep -E '^NCCL_' || true
      X2=(--devices gpu --models simple_cnn,resnet18 --pipeline loader,resident --batch-size 128 --epochs 3
        --train-size 25000 --placement partitioned)
      CUDA_VISIBLE_DEVICES=0 bcg 170 --name alone1 "${X2[@]}"
      bcg 130 --name together --repeats 2 "${X2[@]}"
      CUDA_VISIBLE_DEVICES=0 bcg "$(left)" --name alone2 "${X2[@]}"
      python reports/h200/multi_gpu.py "$res/alone1" "$res/together" "$res/alone2" --out "$res/multi-gpu.json"
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
} 2>&1 | tee "$log"
tar -C "$out" -czf "$out/$step.tar.gz" "$step"
rm -rf "$res"
