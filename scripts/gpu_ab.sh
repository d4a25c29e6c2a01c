#!/usr/bin/env bash
# The interleaved A/B measurements of docs/ab-schedules.md, in one call of a one-GPU
# machine: the true effect of each cell of benches/ab-known-effect.yaml (one process,
# interleaved pairs), then `kernbench ab` on it under both schedules, 6 rounds with A/A,
# each timed; and the tf32 A/B under the interleaved schedule.
# Usage: bash scripts/gpu_ab.sh OUT_DIR [STEP...]   (needs the pydantic wheels in .whl/)
# STEP: reference, interleaved, sequential, short, tf32, tf32-sequential, nccl-proto (two GPUs), nccl-proto-resume
# (the committed NCCL A/B's remaining rounds) (default: the first three; one call of 10 minutes
# holds about three of them).
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out" /tmp/ab
source scripts/gpu_env.sh
log="$out/ab.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv > "$log"

# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"

steps=("${@:2}")
[ ${#steps[@]} -eq 0 ] && steps=(reference interleaved sequential)
for step in "${steps[@]}"; do
  case $step in
    reference) timed reference timeout 120 python3 scripts/ab_reference.py \
      --bench benches/ab-known-effect.yaml --device cuda --pairs 200 \
      --out "$out/reference.json" ;;
    interleaved|sequential) timed "$step" timeout 360 python3 -m kernbench ab \
      --bench ab-known-effect --device cuda --schedule "$step" --out "/tmp/ab/known-$step" ;;
    short) # the 0.3 and 2.5 ms cells alone, with 5 ms turns
      sed '/M: 384, N: 384/d; s/^name: ab-known-effect$/name: ab-known-effect-long/' \
        benches/ab-known-effect.yaml > benches/ab-known-effect-long.yaml
      timed short-turns timeout 240 python3 -m kernbench ab --bench ab-known-effect-long \
        --device cuda --turn-ms 5 --out /tmp/ab/long-interleaved-5ms ;;
    nccl-proto) # two GPUs: NCCL_PROTO Simple against LL on all-reduce (issue 16)
      timed nccl-proto timeout "${NCCL_AB_TIMEOUT:-240}" python3 -m kernbench ab \
        --bench ab-nccl-proto --device cuda --schedule sequential --out /tmp/ab/nccl-proto ;;
    nccl-proto-resume) # its unfinished sides and rounds, into a copy of the committed folder
      cp -r benches/data/ab-nccl-proto-h200x2 /tmp/ab/nccl-proto
      timed nccl-proto-resume timeout "${NCCL_AB_TIMEOUT:-240}" python3 -m kernbench ab \
        --resume /tmp/ab/nccl-proto ;;
    tf32) timed tf32-interleaved timeout 420 python3 -m kernbench ab --bench ab-tf32 \
      --device cuda --schedule interleaved --out /tmp/ab/tf32-interleaved ;;
    tf32-sequential) timed tf32-sequential timeout "${TF32_SEQ_TIMEOUT:-540}" python3 -m kernbench \
      ab --bench ab-tf32 --device cuda --schedule sequential --out /tmp/ab/tf32-sequential ;;
    *) echo "unknown step $step" | tee -a "$log" ;;
  esac
  # after every step, so a call stopped at its time limit still brings back what ran
  tar czf "$out/ab.tgz" -C /tmp/ab --exclude=tasks --exclude=journal .
done
grep WALL "$log"
