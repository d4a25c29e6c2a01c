# Sourced by the collective scripts on the device machine: an MPI on the path, unpacked from
# the MPICH wheel that scripts/gpu_mpi_wheel.sh put in .whl/mpi/ (a pip install --target
# drops its lib/, so it is unzipped; the image's own mpicc, where there is one, comes
# without its headers), and `mpi_run NP PROGRAM ...`,
# which starts NP local processes under either MPICH's or Open MPI's launcher, with the
# environment passed on.
for wheel in .whl/mpi/mpich-*.whl; do
  [ -e "$wheel" ] || continue
  rm -rf /tmp/mpich && mkdir -p /tmp/mpich
  python3 -m zipfile -e "$wheel" /tmp/mpich
  mpi_data=$(ls -d /tmp/mpich/mpich-*.data/data)
  chmod +x "$mpi_data"/bin/*
  export PATH=$mpi_data/bin:$PATH LD_LIBRARY_PATH=$mpi_data/lib:${LD_LIBRARY_PATH:-}
done
# MPICH's launcher (hydra) or Open MPI's, decided once: a `mpiexec --version | grep -q`
# under pipefail fails at random (grep quits, mpiexec dies of SIGPIPE).
case $(mpiexec --version 2>&1 || true) in
  *[Hh][Yy][Dd][Rr][Aa]*) mpi_launcher=hydra ;;
  *) mpi_launcher=openmpi ;;
esac
mpi_run() {
  local np=$1
  shift
  if [ "$mpi_launcher" = hydra ]; then
    mpiexec -launcher fork -n "$np" "$@"
  else
    local exported=() name
    for name in LD_LIBRARY_PATH NCCL_NVLS_ENABLE NCCL_GRAPH_MIXING_SUPPORT NCCL_GRAPH_REGISTER; do
      [ -n "${!name+set}" ] && exported+=(-x "$name")  # only the ones this shell sets
    done
    mpirun --allow-run-as-root -np "$np" "${exported[@]}" "$@"
  fi
}
