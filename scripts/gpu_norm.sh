#!/usr/bin/env bash
# ops-norm on one GPU: softmax, layer_norm and rms_norm forward, eager, under torch.compile
# and by the bench's one-pass Triton row kernels (benches/ops-norm.yaml, ADR 0074), ROUNDS
# rounds (default 1), into runs/norm/run-<UTC>/ (results.json, report, figures/), packed
# into OUT_DIR; the log in OUT_DIR/norm.log. On an H200: 180 cells; 2 rounds ran in 261 s,
# compiling the 60 torch.compile cells included (docs/gpu-runs.md).
# Usage: [ONLY="KEY=V[,V] ..."] [ROUNDS=N] [RUN_TIMEOUT=S] bash scripts/gpu_norm.sh OUT_DIR
#   ONLY: the cells to run (`--only` of each KEY=V, e.g. ONLY="variant=triton op=rms_norm")
# The run itself: scripts/gpu_op_bench.sh (its needs, exit codes).
exec bash "$(dirname "$0")/gpu_op_bench.sh" ops-norm norm "${1:?usage: bash scripts/gpu_norm.sh OUT_DIR}"
