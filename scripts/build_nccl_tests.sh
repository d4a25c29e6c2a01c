#!/usr/bin/env bash
# Builds nccl-tests (a checkout outside this repository's history: third_party/ is
# ignored) against the NCCL that torch ships, into /tmp/nccl-tests-build, for sm_90.
# Usage: bash scripts/build_nccl_tests.sh NCCL_TESTS_DIR
set -euo pipefail
src=${1:?NCCL_TESTS_DIR}
built() { [ -x /tmp/nccl-tests-build/all_reduce_perf ]; }  # earlier in this machine
built_mpi() { ! command -v mpicc > /dev/null || [ -x /tmp/nccl-tests-build/all_reduce_perf_mpi ]; }
built && built_mpi && exit 0
nccl_pkg=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
mkdir -p /tmp/nccl/lib
ln -sfn "$nccl_pkg/include" /tmp/nccl/include
ln -sf "$nccl_pkg"/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so.2
ln -sf "$nccl_pkg"/lib/libnccl.so.2 /tmp/nccl/lib/libnccl.so
cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
built || make -s -C "$src" -j 16 MPI=0 CUDA_HOME="$cuda_home" NCCL_HOME=/tmp/nccl \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=/tmp/nccl-tests-build \
  > /tmp/nccl-build.log 2>&1 || { tail -30 /tmp/nccl-build.log; exit 1; }
echo "nccl-tests built against $nccl_pkg"
# With an MPI on the machine, the same tests as one process per GPU, as kernbench runs
# its ranks (one process driving both GPUs is not the same transport or launch path).
if [ "${NCCL_TESTS_MPI:-1}" = 1 ] && command -v mpicc > /dev/null; then
  mpi_home=$(dirname "$(dirname "$(command -v mpicc)")")
  make -s -C "$src" -j 16 MPI=1 MPI_HOME="$mpi_home" NAME_SUFFIX=_mpi CUDA_HOME="$cuda_home" \
    NCCL_HOME=/tmp/nccl NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
    BUILDDIR=/tmp/nccl-tests-build > /tmp/nccl-build-mpi.log 2>&1 \
    && echo "nccl-tests (MPI) built" \
    || { echo "nccl-tests (MPI) did not build:"; tail -n 8 /tmp/nccl-build-mpi.log; }
fi
