#!/usr/bin/env bash
# What kernbench's collective sample adds, and what it is against nccl-tests in kernbench's
# own process model (issue 17; docs/gpu-runs.md), on 2 GPUs in one call. Over 1 KiB to
# 4 MiB, fp32, PASSES times in turn:
# - nccl-tests as a thread per GPU (-t 2 -g 1, logs *_threads.N.log) and, with an MPI
#   (scripts/gpu_mpi_wheel.sh), as a process per GPU (*_mpi.N.log), eager and with graphs
#   of the 50 calls launched 10 times (-G 10, *_mpi_graph.N.log), and so with NCCL's graph
#   mixing support off, as kernbench runs its graphs (*_mpi_graph_nomix.N.log; ADR 0046);
# - scripts/ccl_reference.py, graph replays of 50 calls in a process per GPU: (loop) one
#   timed replay per repeat after a host barrier; (queued) 20 replays back to back, events
#   between them; (queued-sync) as queued with a one-element all-reduce before each replay,
#   as kernbench's samples began before the seventh session; (queued-sync-28) the same at
#   28 calls, the sample size its eager warm-up estimate gave; (queued-hold, -10, -200) as
#   queued behind a 50 ms spinning kernel, at 50, 10 and 200 calls a replay; REFERENCES
#   picks them (none: no reference runs);
# - milestone-1h-ccl's cells through kernbench (this tree), one round, for each API of
#   the collective kernel in APIS (default nccl; torch: kernels/collective.py), and with BEFORE=DIR
#   through the kernbench package in DIR (an earlier tree, unpacked there with
#   `git archive`), so they read the same minutes.
# Then tables of each against each nccl-tests flavour, over every pass in /tmp/ccl-sample,
# and (scripts/nccl_bands.py) each run against all flavours band by band, NAME-bands.md
# (FIRST_PASS=N numbers this call's passes on from an earlier call's on the same machine).
# Logs, JSON and tables come back as OUT_DIR/sample.tgz.
# WARM=1: each pass also runs the cells with `l2: warm` (every call on the same buffers;
# the default, cold, rotates them: ADR 0045), as kernbench-API-warm.N.
# LOW_POW, HIGH_POW: other sizes, 2^LOW_POW to 2^HIGH_POW bytes (default 10 and 22).
# MILESTONE=1: then milestone-1h-ccl whole (both dtypes, MILESTONE_ROUNDS=2 rounds; about
# 3 min a round on 2 H200s), for benches/data, as kernbench-milestone.1, which the tables
# then read too (its fp32 cells). THREADS=0: no nccl-tests with a thread per GPU.
# APIS=none: no kernbench run of the pass's own. NOREG=1: nccl-tests' -G also with NCCL's
# buffer registration off (and mixing off), *_mpi_graph_noreg.N.log.
# Issue 17's comparison, three passes over
# 1 KiB to 1 GiB (~7 min), and the bench's data (~6 min), in two calls:
#   HIGH_POW=30 PASSES=3 REFERENCES=none bash scripts/gpu_ccl_sample.sh third_party/nccl-tests OUT
#   MILESTONE=1 PASSES=0 bash scripts/gpu_ccl_sample.sh third_party/nccl-tests OUT
# APIS="nccl nccl-eager nccl-graphs nccl-driver": each API's default (graphs, ADR 0046),
# and with an ending: -eager eager calls (KERNBENCH_COLLECTIVE_GRAPHS=0), -graphs graphs
# captured by torch, -driver graphs captured thread-local through the driver, as
# nccl-tests' -G (KERNBENCH_COLLECTIVE_CAPTURE=torch or driver). An entry's
# +VAR=VALUE suffixes set the environment of its run alone (nccl-driver+NCCL_GRAPH_REGISTER=0,
# whose results are kernbench-nccl-driver-NCCL_GRAPH_REGISTER_0.N).
# STEP_POW=N: kernbench's cells at every Nth power of two only (nccl-tests runs them all).
# Usage: [PASSES=1] [FIRST_PASS=1] [REFERENCES="loop queued ..."] [APIS="nccl torch"]
#   [BEFORE=DIR] bash scripts/gpu_ccl_sample.sh NCCL_TESTS_DIR OUT_DIR
#   (pydantic wheels in .whl/, MPICH in .whl/mpi/)
set -uo pipefail
src=${1:?NCCL_TESTS_DIR}
out=${2:?OUT_DIR}
mkdir -p "$out"
source scripts/gpu_env.sh
source scripts/mpi_env.sh
work=/tmp/ccl-sample
mkdir -p "$work"
low=${LOW_POW:-10} high=${HIGH_POW:-22}  # sizes 2^low to 2^high bytes
step=${STEP_POW:-1}  # kernbench's cells every 2^step (nccl-tests runs every size)
sizes=$(python3 -c "print(','.join(str(2**p) for p in range($low, $high + 1, $step)))")
span=(-b $((2 ** low)) -e $((2 ** high)) -f 2 -w 5 -n 50 -d float)  # nccl-tests' sizes
reference() {  # reference NAME.PASS [ccl_reference options]
  local name=$1
  shift
  timeout 100 python3 -m kernbench.execute.launch --nproc-per-node 2 scripts/ccl_reference.py \
    --dtype fp32 --sizes "$sizes" --iters 50 --repeats 3 --graph "$@" --out "$work/$name.json" \
    > "$work/$name.log" 2>&1
  echo "$name exit $?"
}
kernbench() {  # kernbench NAME.PASS PYTHONPATH [BENCH]; each log line stamped with its second
  PYTHONPATH=/tmp/site:$2 PYTHONUNBUFFERED=1 timeout "${KERNBENCH_TIMEOUT:-170}" python3 -m \
    kernbench run --bench "${3:-milestone-1h-ccl}" --device cuda --only dtype=fp32 \
    --only "bytes=$sizes" --rounds 1 --out "$work/$1" 2>&1 \
    | while IFS= read -r line; do echo "$(date +%s) $line"; done > "$work/$1.log"
  echo "kernbench $1 exit ${PIPESTATUS[0]}"
}
if [ "${WARM:-0}" = 1 ]; then  # the bench with l2: warm (every call on the same buffers)
  python3 scripts/bench_variant.py benches/milestone-1h-ccl.yaml \
    /tmp/ccl-warm/milestone-1h-ccl.yaml 'timer: {l2: warm}'
fi
{
  python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
  if [ "${PASSES:-1}" -gt 0 ]; then
    bash scripts/build_nccl_tests.sh "$src" || exit 1
  fi
  export LD_LIBRARY_PATH=/tmp/nccl/lib:${LD_LIBRARY_PATH:-}
  first=${FIRST_PASS:-1}
  for pass in $(seq "$first" $((first + ${PASSES:-1} - 1))); do
    for test in all_reduce all_gather reduce_scatter; do
      if [ "${THREADS:-1}" = 1 ]; then
        /tmp/nccl-tests-build/${test}_perf "${span[@]}" -t 2 -g 1 \
          > "$work/${test}_threads.$pass.log" 2>&1
        echo "pass $pass nccl-tests $test, a thread per GPU: exit $?"
      fi
      [ -x "/tmp/nccl-tests-build/${test}_perf_mpi" ] || continue
      mpi_run 2 "/tmp/nccl-tests-build/${test}_perf_mpi" "${span[@]}" -g 1 \
        > "$work/${test}_mpi.$pass.log" 2>&1
      echo "pass $pass nccl-tests $test, a process per GPU: exit $?"
      mpi_run 2 "/tmp/nccl-tests-build/${test}_perf_mpi" "${span[@]}" -g 1 -G 10 \
        > "$work/${test}_mpi_graph.$pass.log" 2>&1
      echo "pass $pass nccl-tests $test, a process per GPU, -G 10: exit $?"
      NCCL_GRAPH_MIXING_SUPPORT=0 mpi_run 2 "/tmp/nccl-tests-build/${test}_perf_mpi" \
        "${span[@]}" -g 1 -G 10 > "$work/${test}_mpi_graph_nomix.$pass.log" 2>&1
      echo "pass $pass nccl-tests $test, a process per GPU, -G 10, graph mixing off: exit $?"
      if [ "${NOREG:-0}" = 1 ]; then  # is its graphs' faster all-gather NCCL's buffer registration?
        NCCL_GRAPH_MIXING_SUPPORT=0 NCCL_GRAPH_REGISTER=0 mpi_run 2 \
          "/tmp/nccl-tests-build/${test}_perf_mpi" "${span[@]}" -g 1 -G 10 \
          > "$work/${test}_mpi_graph_noreg.$pass.log" 2>&1
        echo "pass $pass nccl-tests $test, -G 10, mixing and registration off: exit $?"
      fi
    done
    for name in ${REFERENCES:-loop queued queued-sync queued-sync-28}; do
      case $name in
        loop) reference "loop.$pass" ;;
        queued) reference "queued.$pass" --samples 20 ;;
        queued-sync) reference "queued-sync.$pass" --samples 20 --gpu-sync ;;
        queued-sync-28) reference "queued-sync-28.$pass" --samples 20 --gpu-sync --iters 28 ;;
        queued-hold) reference "queued-hold.$pass" --samples 20 --hold-ms 50 ;;
        queued-hold-10) reference "queued-hold-10.$pass" --samples 20 --hold-ms 50 --iters 10 ;;
        queued-hold-200) reference "queued-hold-200.$pass" --samples 20 --hold-ms 50 --iters 200 ;;
        none) ;;
        *) echo "unknown reference $name (known: loop queued queued-sync queued-sync-28"\
          "queued-hold queued-hold-10 queued-hold-200 none)" ;;
      esac
    done
    for api in ${APIS:-nccl}; do
      [ "$api" = none ] && continue
      (
        unset KERNBENCH_COLLECTIVE_GRAPHS KERNBENCH_COLLECTIVE_CAPTURE  # the API's default
        mode=${api%%+*}  # +VAR=VALUE suffixes: environment for this run alone
        IFS=+ read -ra envs <<< "${api#"$mode"}"
        for setting in "${envs[@]}"; do [ -n "$setting" ] && export "${setting?}"; done
        case $mode in
          *-eager) export KERNBENCH_COLLECTIVE_GRAPHS=0 ;;
          *-graphs) export KERNBENCH_COLLECTIVE_GRAPHS=1 KERNBENCH_COLLECTIVE_CAPTURE=torch ;;
          *-driver) export KERNBENCH_COLLECTIVE_GRAPHS=1 KERNBENCH_COLLECTIVE_CAPTURE=driver ;;
        esac
        base=${mode%-graphs}
        base=${base%-driver}
        base=${base%-eager}
        label=$(echo "$api" | tr '+=' '-_')
        KERNBENCH_COLLECTIVE_API=$base kernbench "kernbench-$label.$pass" "$PWD"
        [ "${WARM:-0}" = 1 ] && KERNBENCH_COLLECTIVE_API=$base kernbench \
          "kernbench-$label-warm.$pass" "$PWD" /tmp/ccl-warm/milestone-1h-ccl.yaml
      )
    done
    unset KERNBENCH_COLLECTIVE_GRAPHS KERNBENCH_COLLECTIVE_CAPTURE
    [ -n "${BEFORE:-}" ] && kernbench "before.$pass" "$(cd "$BEFORE" && pwd)"
  done
  if [ "${MILESTONE:-0}" = 1 ]; then  # the bench's committed data: every cell, both dtypes
    timeout "${MILESTONE_TIMEOUT:-500}" python3 -m kernbench run --bench milestone-1h-ccl \
      --device cuda --rounds "${MILESTONE_ROUNDS:-2}" --out "$work/kernbench-milestone.1" \
      > "$work/kernbench-milestone.1.log" 2>&1
    echo "milestone-1h-ccl exit $?"
  fi
  for logs in _threads _mpi _mpi_graph _mpi_graph_nomix _mpi_graph_noreg; do
    compgen -G "$work/all_reduce$logs.[0-9]*.log" > /dev/null || continue
    kernbench_runs=$(cd "$work" && ls -d kernbench-*.[0-9]* 2> /dev/null | grep -v "\.log$" \
      | sed 's/\.[0-9]*$//' | sort -u)
    for name in $kernbench_runs before loop queued queued-sync queued-sync-28 \
      queued-hold queued-hold-10 queued-hold-200; do
      runs=()
      for found in "$work/$name".[0-9]*; do
        [ -e "$found/results.json" ] && runs+=(--results "$found/results.json")
        [ "${found%.json}" != "$found" ] && runs+=(--results "$found")
      done
      [ ${#runs[@]} -gt 0 ] || continue
      python3 scripts/nccl_compare.py --nccl-tests "$work" --logs "$logs" "${runs[@]}" \
        --out-md "$work/compare-$name$logs.md" --out-json "$work/compare-$name$logs.json" \
        | grep -E "^- " | sed "s/^/$name$logs /"
    done
  done
  for found in "$work"/compare-*_mpi.json; do  # each run against every flavour, by band
    [ -e "$found" ] || continue
    name=${found%_mpi.json}
    reports=()
    for logs in _mpi _mpi_graph _mpi_graph_nomix _mpi_graph_noreg _threads; do
      [ -e "${name}$logs.json" ] && reports+=(--report "${logs#_}=${name}$logs.json")
    done
    python3 scripts/nccl_bands.py "${reports[@]}" --out-md "${name}-bands.md" \
      | sed -n "3,/^$/{/^$/!p}" | sed "s|^|${name#"$work"/compare-} |"
  done
} > "$out/sample.log" 2>&1
tar czf "$out/sample.tgz" -C /tmp --exclude=tasks ccl-sample
grep -E "exit|worst|α|unknown" "$out/sample.log"
