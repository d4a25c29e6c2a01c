#!/usr/bin/env bash
# Wheels the device machine lacks for the op benches' flag_gems backend (issue 15), put in
# .whl/ beside the pydantic ones (../shared/tools/gpu-wheels.sh): FlagGems (pure Python)
# and the one requirement the machine's image does not hold (SQLAlchemy, for its
# tuning cache). Its other requirements (numpy, PyYAML, packaging, triton, torch) are on
# the image; install them all with --no-deps so the image's versions stay.
# Usage: bash scripts/gpu_op_wheels.sh
set -euo pipefail
mkdir -p .whl
for pkg in flag-gems==5.0.2 sqlalchemy==2.0.48 greenlet; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d .whl "$pkg"
done
ls .whl
