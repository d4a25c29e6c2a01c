#!/usr/bin/env bash
# An MPI for the device machine, whose image has none: MPICH's binary wheel (mpicc, mpiexec,
# libmpi) in .whl/mpi/, beside the pydantic wheels but out of their glob (gpu_env.sh pip
# installs .whl/*.whl; this one is unpacked instead, by scripts/mpi_env.sh). With it,
# build_nccl_tests.sh also builds nccl-tests as one process per GPU, kernbench's own
# process model (issue 17).
# Usage: bash scripts/gpu_mpi_wheel.sh
set -euo pipefail
mkdir -p .whl/mpi
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 -d .whl/mpi mpich==5.0.2
ls .whl/mpi
