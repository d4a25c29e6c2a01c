"""Device-to-device copies of several sizes, timed as the memory ceiling times its
methods (`execute/calibrate_memory.best_of_methods`: the same timer, rounds and check),
printed one line each in GB/s of bytes moved. Asks whether the ceiling's two copy sizes
miss a faster one, e.g. the 1 GiB buffers of ops-norm's largest cells.
Usage (on a CUDA machine): python3 scripts/copy_sizes.py [MiB ...] (default 256 512 1024 2048 4096)
"""

import random
import sys

from kernbench.execute.calibrate_memory import CopyMethod, best_of_methods, torch_copy, triton_copy
from kernbench.execute.calibrate_setup import Sampler, Sizes


def main(mebibytes: list[int]) -> None:
    sizes = Sizes()
    methods = [(CopyMethod("torch", mib << 20), torch_copy) for mib in mebibytes]
    methods += [(CopyMethod("triton", mib << 20), triton_copy) for mib in mebibytes]
    ceiling = best_of_methods(methods, Sampler().samples_of, sizes.copy_timer(), sizes.rounds,
                              random.Random(sizes.seed))
    for name, gbs in sorted(ceiling.rates_gbs.items(), key=lambda item: -item[1]):
        print(f"{name:24s} {gbs:8.1f} GB/s")
    for key, value in ceiling.notes.items():
        if key.endswith(("_skipped", "_refused")):
            print(key, value)


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [256, 512, 1024, 2048, 4096])
