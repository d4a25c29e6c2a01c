"""The environment variables kernbench itself sets in the processes it starts.

The runner sets them in each worker (`KERNBENCH_ROUND`, `KERNBENCH_SIDE`, the GPU, the
host and its own pid) and the A/B runner in each side's `kernbench run` (`KERNBENCH_SWITCH`
too). They are read by the execute stage, by provenance and by kernels (a kernel may branch
on the side or the round), so they live under every layer, beside errors and dtypes.
"""

from __future__ import annotations

ROUND_ENV = "KERNBENCH_ROUND"  # the worker's round, 1-based
SIDE_ENV = "KERNBENCH_SIDE"  # "" in a plain run, "A" or "B" in an A/B side
SWITCH_ENV = "KERNBENCH_SWITCH"  # the A/B's switch, so provenance records its value
GPU_ENV = "KERNBENCH_GPU"  # the worker's GPU (GpuId as JSON), for its round results
NODE_RANK_ENV = "KERNBENCH_NODE_RANK"  # tells a worker which host it runs on
# The pid of the runner that started a worker: the worker dies with it. Its own parent pid,
# read once its imports are done, is no proof: a runner killed in the meantime left it to
# init, whose pid it would then take for its runner's and go on measuring.
PARENT_PID_ENV = "KERNBENCH_PARENT_PID"
# A sequential A/B side's log, which its runner opens in the side's --out folder before the
# side's `kernbench run` starts: the one file that run may find there.
SIDE_LOG_ENV = "KERNBENCH_SIDE_LOG"
# Fast mode of `kernbench run` (a user's setting): an A/B side's run removes it, as it
# must measure whatever the shell that started the A/B asks of plain runs.
FAST_ENV = "MILESTONE_FAST"

# Every name above: a switch of one of them would be overwritten in each side's process.
RUNNER_SET = frozenset({
    ROUND_ENV, SIDE_ENV, SWITCH_ENV, GPU_ENV, NODE_RANK_ENV, SIDE_LOG_ENV, PARENT_PID_ENV,
})
