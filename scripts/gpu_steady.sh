#!/usr/bin/env bash
# Steady GPU timing on one H200 (issue 11; see docs/gpu-runs.md): SWEEPS full runs of
# milestone-1h-gemm in one call (each run's rounds visit the cells in a different order),
# each one's round-to-round spread, the sweeps against each other and against the
# committed data; then, with FIDELITY=1, the fidelity page against do_bench and ncu.
# Usage: [SWEEPS=N] [FIDELITY=1] [CALIBRATE=1] bash scripts/gpu_steady.sh OUT_DIR
#   [kernbench run options]      (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
committed=benches/data/milestone-1h-gemm.json.gz
{
  nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,clocks.max.sm --format=csv
  if [ "${CALIBRATE:-0}" = 1 ]; then
    python3 -m kernbench calibrate --device cuda --out configs/hardware/h200.yaml
    cp configs/hardware/h200.yaml "$out/"
  fi
  for sweep in $(seq 1 "${SWEEPS:-1}"); do
    timeout 330 python3 -m kernbench run --bench milestone-1h-gemm --device cuda \
      --out "/tmp/gemm$sweep" "$@"
    echo "sweep $sweep exit $?"
    python3 scripts/round_spread.py "/tmp/gemm$sweep/results.json" --against "$committed" \
      --out "$out/spread$sweep.json"
  done
  if [ "${SWEEPS:-1}" -ge 2 ]; then
    python3 scripts/round_spread.py /tmp/gemm2/results.json --against /tmp/gemm1/results.json \
      --out "$out/spread-2v1.json"
  fi
  if [ "${FIDELITY:-0}" = 1 ]; then
    timeout 200 python3 scripts/fidelity.py --out "$out/h200-fidelity.json"
    echo "fidelity exit $?"
  fi
  cp benches/pins/milestone-1h-gemm.json "$out/pins.json"
} > "$out/steady.log" 2>&1
sweeps=$(cd /tmp && ls -d gemm[0-9]* 2>/dev/null)
[ -n "$sweeps" ] && tar czf "$out/gemm.tgz" -C /tmp --exclude=tasks $sweeps
grep -E "spread|against|exit" "$out/steady.log"
