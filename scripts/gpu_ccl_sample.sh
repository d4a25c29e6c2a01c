#!/usr/bin/env bash
# What kernbench's collective sample adds to a plain loop (issue 17; docs/gpu-runs.md), on
# 2 GPUs in one call: scripts/ccl_reference.py over 1 KiB to 4 MiB, fp32, as graph replays
# of 50 calls, (1) one timed loop per repeat after a host barrier, (2) 20 loops queued back
# to back per repeat, events between them, and (3) as (2) with a one-element all-reduce
# before each loop, as kernbench's sample begins. A gap between (2) and (3) is the eager
# all-reduce between graph replays; between (1) and (2), the queueing.
# Usage: bash scripts/gpu_ccl_sample.sh OUT_DIR   (pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
sizes=$(python3 -c 'print(",".join(str(2**p) for p in range(10, 23)))')
run() {  # run NAME [ccl_reference options]
  local name=$1
  shift
  timeout 100 python3 -m kernbench.execute.launch --nproc-per-node 2 scripts/ccl_reference.py \
    --dtype fp32 --sizes "$sizes" --iters 50 --repeats 5 --graph "$@" --out "$out/$name.json" \
    > "$out/$name.log" 2>&1
  echo "$name exit $?"
}
run loop
run queued --samples 20
run queued-sync --samples 20 --gpu-sync
