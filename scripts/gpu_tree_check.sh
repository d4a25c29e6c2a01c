#!/usr/bin/env bash
# A session's tree on one GPU, in one call: the smoke test of the CUDA pieces
# (scripts/gpu_smoke.py --quick, no fidelity page: cuBLAS and Triton GEMMs, pins, the
# graph and event timers, the flush kernels, NVML, calibrate), one round of
# milestone-1h-gemm's M=4096 cells, and ops-moe-topk's torch cells of one token (graph
# timed, cold L2: the timer whose samples are a difference), and a short interleaved A/B of
# NVIDIA_TF32_OVERRIDE on ab-tf32's tf32 cells (3 rounds with A/A: its outputs, verdict table
# and `--only` note). About 5 minutes on an H200; the runs come back packed in
# OUT_DIR/runs.tar.xz.
# Usage: bash scripts/gpu_tree_check.sh OUT_DIR   (needs .whl/ from ../shared/tools/gpu-wheels.sh)
set -uo pipefail
out=${1:?OUT_DIR}
work=runs/tree-check  # git-ignored: the runs record paths relative to the checkout
rm -rf "$work" && mkdir -p "$out" "$work"
source scripts/gpu_env.sh
log="$out/tree-check.log"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv >> "$log"
git log -1 --format='tree of commit %H' >> "$log" 2>/dev/null
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"
timed smoke timeout 240 python3 scripts/gpu_smoke.py --out "$out/smoke" --quick --no-fidelity
timed sweep timeout 150 python3 -m kernbench run --bench milestone-1h-gemm --device cuda \
  --only M=4096 --rounds 1 --out "$work/sweep"
timed topk timeout 120 python3 -m kernbench run --bench ops-moe-topk --device cuda \
  --only tokens=1 --only variant=torch --rounds 2 --out "$work/topk"
timed ab timeout 180 python3 -m kernbench ab --bench ab-tf32 --only dtype=tf32 --rounds 3 \
  --out "$work/ab-tf32"
# The runs packed whole (the device brings back few files), journals and tasks left out.
tar cJf "$out/runs.tar.xz" -C "$work" --exclude=tasks --exclude=journal .
grep WALL "$log"
