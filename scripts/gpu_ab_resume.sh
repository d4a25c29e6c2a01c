#!/usr/bin/env bash
# `kernbench ab --resume` on a GPU (ab/resume_machine.py reads the GPU through nvidia-smi,
# the parent process holding no CUDA context): an interleaved A/B of ab-known-effect's
# 0.3 ms cells stopped by SIGINT after its second round, resumed on the same machine (no
# refusal, at most a note), then a copy whose kept sides claim another device model,
# which must be refused (exit 2) before any side runs, and resumed with --force.
# Runs are written under the git-ignored runs/ so their recorded paths stay relative.
# Usage: bash scripts/gpu_ab_resume.sh OUT_DIR   (needs .whl/ from ../shared/tools/gpu-wheels.sh)
set -uo pipefail
out=${1:?OUT_DIR}
work=runs/gpu-ab-resume
rm -rf "$work" && mkdir -p "$out" "$work"
[ "${DEVICE:-cuda}" = cuda ] && source scripts/gpu_env.sh
log="$out/ab-resume.log"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > "$log" 2>&1
git log -1 --format='tree of commit %H' >> "$log" 2>/dev/null
# shellcheck source=scripts/timed.sh
. "$(dirname "$0")/timed.sh"

ab=(python3 -m kernbench ab --bench ab-known-effect --device "${DEVICE:-cuda}" --only "M=${M:-1024}"
    --only variant=none,plus5 --rounds 6)
# SIGINT once round 2's three sides have written their results (or after 240 s).
stop_after_round2() {
  for _ in $(seq 240); do
    [ "$(ls "$work"/ab/r2_*/results.json 2>/dev/null | wc -l)" -ge 3 ] && break
    sleep 1
  done
  pkill -INT -f -- "^python3 -m kernbench ab .*--out $work/ab\$"
}
stop_after_round2 &
timed interrupted timeout 300 "${ab[@]}" --out "$work/ab"
ls "$work/ab" >> "$log"
cp -r "$work/ab" "$work/other-model"
timed resumed timeout 300 python3 -m kernbench ab --resume "$work/ab"
# Every kept side of the copy now says it ran on another GPU model.
python3 - "$work/other-model" >> "$log" 2>&1 <<'EOF'
import json, lzma, pathlib, sys
for path in pathlib.Path(sys.argv[1]).rglob("results.json*"):
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    data["provenance"]["device_name"] = "NVIDIA H100 80GB HBM3"
    with opener(path, "wt") as f:
        json.dump(data, f)
    print("device_name rewritten:", path)
EOF
timed refused timeout 120 python3 -m kernbench ab --resume "$work/other-model"
timed forced timeout 300 python3 -m kernbench ab --resume "$work/other-model" --force
tar cJf "$out/runs.tar.xz" -C "$work" --exclude=tasks --exclude=journal .
grep WALL "$log"
