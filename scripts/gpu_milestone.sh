#!/usr/bin/env bash
# The committed H200 data, in one call of a two-GPU machine (see docs/gpu-runs.md):
#   GPU 0: kernbench calibrate, then the milestone-1h-gemm sweep;
#   GPU 1: the NVIDIA_TF32_OVERRIDE A/B (ab-tf32, 6 rounds, with A/A).
# Usage: bash scripts/gpu_milestone.sh OUT_DIR   (needs the pydantic wheels in .whl/)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
nvidia-smi -L > "$out/gpus.txt"
(
  export CUDA_VISIBLE_DEVICES=0
  python3 -m kernbench calibrate --device cuda --out configs/hardware/h200.yaml
  cp configs/hardware/h200.yaml "$out/"
  timeout 480 python3 -m kernbench run --bench milestone-1h-gemm --device cuda --out /tmp/gemm
  echo "gemm exit $?"
) > "$out/gemm.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 500 python3 -m kernbench ab --bench ab-tf32 --device cuda --out /tmp/ab-tf32
  echo "ab exit $?"
) > "$out/ab.log" 2>&1 &
wait
tar czf "$out/gemm.tgz" -C /tmp --exclude=tasks gemm
tar czf "$out/ab.tgz" -C /tmp --exclude=journal --exclude=tasks ab-tf32
tail -3 "$out/gemm.log" "$out/ab.log"
