#!/usr/bin/env bash
# Collective timing against nccl-tests, in one call of a two-GPU machine (issue 17;
# see docs/gpu-runs.md): builds nccl-tests from a checkout that is not part of this
# repository, against the NCCL that torch ships; runs all_reduce, all_gather and
# reduce_scatter from 1 KiB to 1 GiB (plain and with CUDA graphs, -G); runs
# milestone-1h-ccl through kernbench in the same call; writes the comparison tables.
# Usage: [APIS="torch nccl"] [CCL_TIMEOUT=S] [NCCL_TESTS_MPI=0] [REFERENCE_ENVS="VAR=V ..."]
#   [ALTERNATE=K [ALT_API=torch] [FULL=0]] bash scripts/gpu_collectives.sh NCCL_TESTS_DIR OUT_DIR
#   [kernbench run options]
#   ALTERNATE=K: then K passes over 1 KiB to 4 MiB, nccl-tests and kernbench in turn, and
#   a comparison of each side's median over the passes (these VMs' small-message latency
#   wanders by tens of percent over minutes: one run of each is two draws of it);
#   nccl-tests runs both as one thread launching on both GPUs (-g 2) and as a thread per
#   GPU (-t 2 -g 1, tables *_threads); FULL=0 leaves out the 1 KiB to 1 GiB runs before
#   them. Logs and tables come back as OUT_DIR/tables.tgz.
#   (the fp32 cells took about 110 s a round on 2 H200s: pass --rounds to fit the call's limit)
#   (needs the pydantic wheels in .whl/)
set -uo pipefail
src=${1:?NCCL_TESTS_DIR}
out=${2:?OUT_DIR}
shift 2
mkdir -p "$out"
source scripts/gpu_env.sh
source scripts/mpi_env.sh
{
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  bash scripts/build_nccl_tests.sh "$src" || exit 1
  export LD_LIBRARY_PATH=/tmp/nccl/lib:${LD_LIBRARY_PATH:-}
  [ "${FULL:-1}" = 1 ] && for test in all_reduce all_gather reduce_scatter; do
    /tmp/nccl-tests-build/${test}_perf -b 1K -e 1G -f 2 -g 2 -w 5 -n 50 -d float \
      > "$out/${test}.log" 2>&1
    /tmp/nccl-tests-build/${test}_perf -b 1K -e 1G -f 2 -g 2 -w 5 -n 50 -d float -G 10 \
      > "$out/${test}_graph.log" 2>&1
    echo "nccl-tests $test: exit $?"
    if [ -x "/tmp/nccl-tests-build/${test}_perf_mpi" ]; then  # one process per GPU
      mpi_run 2 "/tmp/nccl-tests-build/${test}_perf_mpi" -b 1K -e 1G -f 2 -g 1 -w 5 -n 50 -d float \
        > "$out/${test}_mpi.log" 2>&1
      mpi_run 2 "/tmp/nccl-tests-build/${test}_perf_mpi" -b 1K -e 1G -f 2 -g 1 -w 5 -n 50 -d float \
        -G 10 > "$out/${test}_mpi_graph.log" 2>&1
      echo "nccl-tests $test, one process per GPU: exit $?"
    fi
  done
  # The same collectives in kernbench's process model (a process per GPU) with nothing of
  # its sampling: a plain torch.distributed loop, eager and as graph replays (-G).
  # REFERENCE_ENVS: more graph runs, each under one VAR=VALUE (e.g. NCCL_GRAPH_MIXING_SUPPORT=0).
  sizes=$(python3 -c 'print(",".join(str(2**p) for p in range(10, 31)))')
  [ "${FULL:-1}" = 1 ] && for mode in eager graph ${REFERENCE_ENVS:-}; do
    flag=--graph
    case $mode in eager) flag= ;; graph) ;; *) export "${mode?}" ;; esac
    name=reference-${mode//[^A-Za-z0-9_]/-}
    timeout 120 python3 -m kernbench.execute.launch --nproc-per-node 2 scripts/ccl_reference.py \
      --dtype fp32 --sizes "$sizes" --iters 50 --repeats 10 $flag --out "$out/$name.json"
    echo "reference loop $mode: exit $?"
    for logs in "" _graph; do
      python3 scripts/nccl_compare.py --nccl-tests "$out" --results "$out/$name.json" \
        --logs "$logs" --out-md "$out/compare-$name$logs.md" > /dev/null
    done
    case $mode in *=*) unset "${mode%%=*}" ;; esac
  done
  # Each API of the collective kernel (kernels/collective.py): torch.distributed, and NCCL
  # called directly on the timing stream.
  [ "${FULL:-1}" = 1 ] && for api in ${APIS:-torch nccl}; do
    KERNBENCH_COLLECTIVE_API=$api timeout "${CCL_TIMEOUT:-400}" python3 -m kernbench run \
      --bench milestone-1h-ccl --device cuda --only dtype=fp32 --out "/tmp/ccl-$api" "$@"
    echo "kernbench ($api) exit $?"
    for logs in "" _graph _mpi _mpi_graph; do
      [ -e "$out/all_reduce$logs.log" ] || continue
      python3 scripts/nccl_compare.py --nccl-tests "$out" --results "/tmp/ccl-$api/results.json" \
        --logs "$logs" --out-md "$out/compare-$api$logs.md" --out-json "$out/compare-$api$logs.json"
    done
  done
  small=$(python3 -c 'print(",".join(str(2**p) for p in range(10, 23)))')
  alt_results=()
  for pass in $(seq 1 "${ALTERNATE:-0}"); do
    for test in all_reduce all_gather reduce_scatter; do
      /tmp/nccl-tests-build/${test}_perf -b 1K -e 4M -f 2 -g 2 -w 5 -n 50 -d float \
        > "$out/${test}_alt.$pass.log" 2>&1
      # A thread per GPU: each GPU's launches come from a host thread of their own, as
      # kernbench's rank processes launch (with -g 2 one thread launches on both in turn).
      /tmp/nccl-tests-build/${test}_perf -b 1K -e 4M -f 2 -t 2 -g 1 -w 5 -n 50 -d float \
        > "$out/${test}_alt_threads.$pass.log" 2>&1
    done
    # kernbench's process model (a process per GPU) without its sampling: graph replays of
    # a plain loop, so a gap that this shares with kernbench is the process model's
    # (NCCL joins two processes' GPUs through IPC, one process's through direct pointers).
    timeout 120 python3 -m kernbench.execute.launch --nproc-per-node 2 scripts/ccl_reference.py \
      --dtype fp32 --sizes "$small" --iters 50 --repeats 10 --graph \
      --out "$out/reference_alt.$pass.json"
    KERNBENCH_COLLECTIVE_API=${ALT_API:-torch} timeout "${CCL_TIMEOUT:-400}" python3 -m kernbench \
      run --bench milestone-1h-ccl --device cuda --only dtype=fp32 --only "bytes=$small" \
      --rounds 1 --out "/tmp/ccl-alt$pass"
    echo "alternating pass $pass: kernbench exit $?"
    found=/tmp/ccl-alt$pass/results.json
    [ -e "$found" ] && alt_results+=(--results "$found")
  done
  if [ ${#alt_results[@]} -gt 0 ]; then
    for logs in _alt _alt_threads; do
      python3 scripts/nccl_compare.py --nccl-tests "$out" --logs "$logs" "${alt_results[@]}" \
        --out-md "$out/compare$logs.md" --out-json "$out/compare$logs.json"
    done
  fi
  references=()
  for found in "$out"/reference_alt.*.json; do
    [ -e "$found" ] && references+=(--results "$found")
  done
  if [ ${#references[@]} -gt 0 ]; then
    python3 scripts/nccl_compare.py --nccl-tests "$out" --logs _alt_threads "${references[@]}" \
      --out-md "$out/compare_reference_alt.md" --out-json "$out/compare_reference_alt.json"
  fi
} > "$out/collectives.log" 2>&1
runs=$(cd /tmp && ls -d ccl-* 2>/dev/null)
[ -n "$runs" ] && tar czf "$out/ccl.tgz" -C /tmp --exclude=tasks $runs
# The device tool brings back a few files: the logs and tables as one archive.
(cd "$out" && shopt -s nullglob && tables=(./*.log ./*.md ./*.json) \
  && tar czf tables.tgz "${tables[@]}" && rm -f ./*.md ./*.json \
  && find . -maxdepth 1 -name '*.log' ! -name collectives.log -delete)
tail -n 40 "$out/collectives.log"
