#!/usr/bin/env bash
# Steady GPU timing on one H200 (issue 11; see docs/gpu-runs.md), in one call:
# milestone-1h-gemm (its rounds visit the cells in different orders) and its
# round-to-round spread; with FIDELITY=1 the fidelity page (sustained duty against
# do_bench, isolated against ncu); with SWEEPS=2 a second sweep (SWEEP2_ARGS: extra run
# options, e.g. a subset) in another cell order, compared with the first. CALIBRATE=1
# calibrates first (into configs/hardware/h200.yaml, which then overrides the shipped one);
# CALIBRATE_DUTY=isolated calibrates under that duty, sampling as the bench samples its cells
# (its timer and rounds, ADR 0049), into a profile h200-isolated, which the sweeps then
# read their utilization against (ADR 0036 addendum).
# TIMER_SET="KEY: V, ...": the sweeps run a copy of the bench with these timer settings
# (e.g. "duty: sustained", "settle_clock: true"), its pins copied beside it.
# SERIES=1 first records scripts/sustained_series.py (every sample of the sustained tools).
# Usage: [SWEEPS=1|2] [SWEEP2_ARGS=...] [FIDELITY=1] [FIDELITY_ARGS=...] [CALIBRATE=1]
#   [CALIBRATE_DUTY=isolated]
#   [TIMER_SET=...] bash scripts/gpu_steady.sh OUT_DIR [kernbench run options]
#   (pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
source scripts/gpu_env.sh
committed=benches/data/milestone-1h-gemm.json.xz
bench=milestone-1h-gemm
pins=benches/pins/milestone-1h-gemm.json
if [ -n "${TIMER_SET:-}" ]; then  # pins are found beside the bench file: copied along
  mkdir -p /tmp/bench-variant/pins
  bench=/tmp/bench-variant/milestone-1h-gemm.yaml
  python3 scripts/bench_variant.py benches/milestone-1h-gemm.yaml "$bench" \
    "timer: {$TIMER_SET}" > "$out/timer.txt"
  cp "$pins" /tmp/bench-variant/pins/
  pins=/tmp/bench-variant/pins/milestone-1h-gemm.json
fi
sweep() {  # sweep N [run options]
  local n=$1
  shift
  timeout "${SWEEP_TIMEOUT:-300}" python3 -m kernbench run --bench "$bench" \
    --device cuda --out "/tmp/gemm$n" "$@"
  echo "sweep $n exit $?"
  python3 scripts/round_spread.py "/tmp/gemm$n/results.json" --against "$committed" \
    --out "$out/spread$n.json"
}
# The card's clock, power and temperature every 500 ms through the whole call, to read
# the sweeps' episodes against (docs/steady/).
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > "$out/smi.csv" 2>&1 &
smi=$!
{
  nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.max.sm --format=csv
  if [ "${SERIES:-0}" = 1 ]; then  # every sample of the sustained tools, in order
    timeout 200 python3 scripts/sustained_series.py --out "$out/series.json"
    echo "series exit $?"
  fi
  if [ "${CALIBRATE:-0}" = 1 ]; then
    python3 -m kernbench calibrate --device cuda --out configs/hardware/h200.yaml
    cp configs/hardware/h200.yaml "$out/"
  fi
  if [ -n "${CALIBRATE_DUTY:-}" ]; then  # ceilings in another duty: a profile of its own
    profile=h200-$CALIBRATE_DUTY
    if python3 -m kernbench calibrate --device cuda --bench "$bench" --duty "$CALIBRATE_DUTY" \
      --name "$profile" \
      --out "configs/hardware/$profile.yaml"; then
      cp "configs/hardware/$profile.yaml" "$out/"
      set -- "$@" --hardware "$profile"
    fi
  fi
  if [ "${SWEEPS:-1}" -ge 1 ]; then
    sweep 1 "$@"
    cp "$pins" "$out/pins.json"
  fi
  if [ "${FIDELITY:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    timeout "${FIDELITY_TIMEOUT:-300}" python3 scripts/fidelity.py \
      --out "$out/h200-fidelity.json" ${FIDELITY_ARGS:-}
    echo "fidelity exit $?"
  fi
  if [ "${SWEEPS:-1}" -ge 2 ]; then
    # shellcheck disable=SC2086
    sweep 2 "$@" ${SWEEP2_ARGS:-}
    python3 scripts/round_spread.py /tmp/gemm2/results.json --against /tmp/gemm1/results.json \
      --out "$out/spread-2v1.json"
  fi
} > "$out/steady.log" 2>&1
kill "$smi"
sweeps=$(cd /tmp && ls -d gemm[0-9]* 2>/dev/null)
[ -n "$sweeps" ] && tar czf "$out/gemm.tgz" -C /tmp --exclude=tasks $sweeps
grep -E "spread|against|exit|within" "$out/steady.log"
