#!/usr/bin/env bash
# Fast mode's wall time on this machine, cold (an empty figure cache) and warm: five runs
# each of `MILESTONE_FAST=1 kernbench run --bench milestone-1h-gemm`, then the medians.
# Usage: bash scripts/fast_mode_bench.sh
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wall() {  # wall CACHE_DIR: seconds of one fast-mode run
  local start end
  start=$(date +%s%N)
  KERNBENCH_CACHE_DIR=$1 MILESTONE_FAST=1 kernbench run --bench milestone-1h-gemm \
    --out "$work/out" > /dev/null 2>&1
  end=$(date +%s%N)
  python3 -c "print(round(($end - $start) / 1e9, 2))"
}
median() { python3 -c "import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }
cold=(); warm=()
for i in 1 2 3 4 5; do cold+=("$(wall "$work/cold$i")"); done
for i in 1 2 3 4 5; do warm+=("$(wall "$work/cold1")"); done
echo "cold: ${cold[*]} s; median $(median "${cold[@]}") s"
echo "warm: ${warm[*]} s; median $(median "${warm[@]}") s"
