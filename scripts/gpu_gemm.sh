#!/usr/bin/env bash
# The committed H200 GEMM data in one call of a one-GPU machine (see docs/gpu-runs.md):
# a timer sanity check, kernbench calibrate, the milestone-1h-gemm sweep, the fidelity
# comparison with triton's do_bench and ncu.
# Usage: bash scripts/gpu_gemm.sh OUT_DIR   (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
{
  python3 scripts/gpu_smoke.py --out /tmp/smoke --no-fidelity --only "cublas bf16 1024,add 64K" \
    | tee /tmp/smoke.log
  if grep -q FAIL /tmp/smoke.log; then echo "timer smoke failed"; exit 1; fi
  python3 -m kernbench calibrate --device cuda --out configs/hardware/h200.yaml
  cp configs/hardware/h200.yaml "$out/"
  timeout 420 python3 -m kernbench run --bench milestone-1h-gemm --device cuda --out /tmp/gemm
  echo "gemm exit $?"
  timeout 120 python3 scripts/fidelity.py --out "$out/h200-fidelity.json"
  echo "fidelity exit $?"
} > "$out/gemm.log" 2>&1
tar czf "$out/gemm.tgz" -C /tmp --exclude=tasks gemm
tail -n 4 "$out/gemm.log"
