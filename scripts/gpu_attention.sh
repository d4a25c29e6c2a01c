#!/usr/bin/env bash
# ops-attention on one GPU: torch's scaled_dot_product_attention forward under its math,
# flash, efficient and cudnn backends (benches/ops-attention.yaml, ADR 0072), ROUNDS rounds
# (default 1), into runs/attention/run-<UTC>/ (results.json, report, figures/), packed into
# OUT_DIR; the log in OUT_DIR/attention.log. On an H200: 184 cells, about 2 minutes a round.
# Usage: [ONLY="KEY=V[,V] ..."] [ROUNDS=N] [RUN_TIMEOUT=S] bash scripts/gpu_attention.sh OUT_DIR
#   ONLY: the cells to run (`--only` of each KEY=V, e.g. ONLY="variant=flash,cudnn seq=4096")
# The run itself: scripts/gpu_op_bench.sh (its needs, exit codes).
exec bash "$(dirname "$0")/gpu_op_bench.sh" ops-attention attention "${1:?usage: bash scripts/gpu_attention.sh OUT_DIR}"
