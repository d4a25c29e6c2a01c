#!/usr/bin/env bash
# A GPU model kernbench has datasheet figures for but no calibration (docs/gpu-runs.md,
# "An H100"), in one call: its ceilings under both duties, then the milestone-1h-gemm
# sweep read against them, its Triton pins recorded for this card, and its round spread.
#   PROFILE=h100 (default): the shipped datasheet profile the calibrations keep;
#   CALIBRATE=0: skip them (a second call, after carrying configs/hardware/PROFILE*.yaml);
#   RESUME=gemm.tgz: finish the sweep an earlier call brought back (its run folder);
#   FIDELITY=1 [FIDELITY_ARGS=...]: scripts/fidelity.py after the sweep (do_bench, ncu);
#   SWEEP=0: no sweep.
# Usage: [PROFILE=...] bash scripts/gpu_card.sh OUT_DIR [kernbench run options]
#   (pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
source scripts/gpu_env.sh
profile=${PROFILE:-h100}
pins=benches/pins/milestone-1h-gemm.json
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.max.sm,memory.total \
  --format=csv > "$out/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > "$out/smi.csv" 2>&1 &
smi=$!
{
  if [ "${CALIBRATE:-1}" = 1 ]; then
    timeout "${CALIBRATE_TIMEOUT:-200}" python3 -m kernbench calibrate --device cuda \
      --name "$profile" --out "configs/hardware/$profile.yaml"
    echo "calibrate sustained exit $?"
    # Under the sweep's own timer and rounds (ADR 0049): named PROFILE-isolated.
    timeout "${CALIBRATE_TIMEOUT:-200}" python3 -m kernbench calibrate --device cuda \
      --bench milestone-1h-gemm --out "configs/hardware/$profile-isolated.yaml"
    echo "calibrate isolated exit $?"
    cp configs/hardware/"$profile"*.yaml "$out/"
  fi
  if [ "${SWEEP:-1}" = 1 ]; then
    if [ -n "${RESUME:-}" ]; then
      tar xzf "$RESUME" -C /tmp
      where=(--resume /tmp/gemm)
    else
      where=(--out /tmp/gemm)
    fi
    timeout "${SWEEP_TIMEOUT:-300}" python3 -m kernbench run --bench milestone-1h-gemm \
      --device cuda --save-pins "${where[@]}" "$@"
    echo "sweep exit $?"
    cp "$pins" "$out/pins.json"
    python3 scripts/round_spread.py /tmp/gemm/results.json --out "$out/spread.json" \
      --against benches/data/milestone-1h-gemm.json.xz
    tar czf "$out/gemm.tgz" -C /tmp gemm
  fi
  if [ "${FIDELITY:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    timeout "${FIDELITY_TIMEOUT:-300}" python3 scripts/fidelity.py \
      --out "$out/$profile-fidelity.json" ${FIDELITY_ARGS:-}
    echo "fidelity exit $?"
  fi
} > "$out/run.log" 2>&1
kill "$smi"
tail -4 "$out/run.log"
