#!/usr/bin/env bash
# A sweep spread over a host's GPUs (issue 16; see docs/gpu-runs.md): milestone-1h-gemm
# on one GPU, then with `--gpus all`, each timed, in the same call; the wall-time ratio and
# each cell of the spread sweep against the one-GPU sweep. ONE_GPU=FILE skips the one-GPU
# sweep and compares against that results.json instead (a run of another call).
# Usage: [ONE_GPU=FILE] [GPUS_TIMEOUT=S] bash scripts/gpu_gpus_all.sh OUT_DIR [kernbench run options]
#   (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
source scripts/gpu_env.sh
sweep() {  # sweep NAME [run options]: a timed run into /tmp/NAME
  local name=$1 began=$SECONDS
  shift
  timeout "${GPUS_TIMEOUT:-300}" python3 -m kernbench run --bench milestone-1h-gemm \
    --device cuda --out "/tmp/$name" "$@"
  echo "$name exit $? wall $((SECONDS - began)) s"
}
{
  nvidia-smi --query-gpu=index,name,uuid --format=csv
  one=${ONE_GPU:-}
  if [ -z "$one" ]; then
    sweep gemm-one-gpu "$@"
    one=/tmp/gemm-one-gpu/results.json
  fi
  sweep gemm-gpus --gpus all "$@"
  python3 scripts/round_spread.py /tmp/gemm-gpus/results.json --against "$one" \
    --out "$out/gpus-all-vs-one.json"
} > "$out/gpus.log" 2>&1
tar czf "$out/gemm-gpus.tgz" -C /tmp --exclude=tasks $(cd /tmp && ls -d gemm-gpus gemm-one-gpu 2>/dev/null)
grep -E "exit|spread|against" "$out/gpus.log"
