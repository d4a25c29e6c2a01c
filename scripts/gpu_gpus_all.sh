#!/usr/bin/env bash
# A sweep spread over a host's GPUs (issue 16; see docs/gpu-runs.md): milestone-1h-gemm
# with `--gpus all`, its wall time, and each cell against a one-GPU run of the same tree
# (ONE_GPU: its results.json, e.g. docs/steady/turns-sweep1.json.gz).
# Usage: ONE_GPU=FILE [GPUS_TIMEOUT=S] bash scripts/gpu_gpus_all.sh OUT_DIR [kernbench run options]
#   (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
source scripts/gpu_env.sh
{
  nvidia-smi --query-gpu=index,name,uuid --format=csv
  began=$SECONDS
  timeout "${GPUS_TIMEOUT:-300}" python3 -m kernbench run --bench milestone-1h-gemm \
    --device cuda --gpus all --out /tmp/gemm-gpus "$@"
  echo "gpus all exit $? wall $((SECONDS - began)) s"
  python3 scripts/round_spread.py /tmp/gemm-gpus/results.json --against "${ONE_GPU:?ONE_GPU}" \
    --out "$out/gpus-all-vs-one.json"
} > "$out/gpus.log" 2>&1
tar czf "$out/gemm-gpus.tgz" -C /tmp --exclude=tasks gemm-gpus
grep -E "exit|spread|against" "$out/gpus.log"
