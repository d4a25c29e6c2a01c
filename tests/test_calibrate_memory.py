"""The memory ceiling: the best verified rate of several copy methods, rated by the bytes
each moves; a missing library skips its method with a note, a wrong output refuses it."""

from __future__ import annotations

import random
import sys

import pytest

from kernbench.analyze.rates import GB
from kernbench.errors import EXIT_FAILED, UserError
from kernbench.execute import calibrate_memory
from kernbench.execute.calibrate_memory import Copy, CopyMethod, best_of_methods
from kernbench.execute.calibrate_setup import COPY_TIMER, Sizes
from kernbench.kernels.base import Kernel
from kernbench.spec.timer_model import TimerSpec

LARGE, SMALL = 2 << 30, 256 << 20


class FakeCopies:
    """Copy methods whose samples take the seconds given per method name, and whose
    output is exact unless named in `wrong`."""

    def __init__(self, seconds: dict[str, float], wrong: frozenset[str] = frozenset()):
        self.seconds, self.wrong = seconds, wrong
        self.by_kernel: dict[int, str] = {}
        self.checked: list[str] = []

    def build(self, method: CopyMethod) -> Copy:
        kernel = Kernel(run=lambda: None)
        self.by_kernel[id(kernel)] = method.name

        def exact() -> bool:
            self.checked.append(method.name)
            return method.name not in self.wrong

        return Copy(kernel, exact)

    def samples_of(self, kernel: Kernel, spec: TimerSpec) -> list[float]:
        return [self.seconds[self.by_kernel[id(kernel)]]] * 3


def _methods(fake: FakeCopies, triton: object = None) -> list:
    return [(CopyMethod("torch", LARGE), fake.build), (CopyMethod("torch", SMALL), fake.build),
            (CopyMethod("triton", LARGE), triton or fake.build)]


def _best(fake: FakeCopies, triton: object = None):
    return best_of_methods(_methods(fake, triton), fake.samples_of, COPY_TIMER, 2,
                           random.Random(0))


def test_a_copy_is_rated_by_the_bytes_it_moves() -> None:
    assert CopyMethod("torch", SMALL).work == 2 * SMALL  # read + written
    assert CopyMethod("triton", LARGE).name == "triton-copy-2048MiB"


def test_the_best_method_wins_and_is_named() -> None:
    fake = FakeCopies({"torch-copy-2048MiB": 1.0e-3, "torch-copy-256MiB": 0.13e-3,
                       "triton-copy-2048MiB": 0.99e-3})
    ceiling = _best(fake)
    assert ceiling.notes["memory_method"] == "triton-copy-2048MiB"
    assert ceiling.gbs == pytest.approx(2 * LARGE / 0.99e-3 / GB)
    assert ceiling.rates_gbs["torch-copy-256MiB"] == pytest.approx(2 * SMALL / 0.13e-3 / GB)
    assert set(ceiling.rates_gbs) == {"torch-copy-2048MiB", "torch-copy-256MiB",
                                      "triton-copy-2048MiB"}
    assert "triton-copy-2048MiB 4338." in str(ceiling.notes["memory_methods"])
    assert sorted(fake.checked) == sorted(ceiling.rates_gbs)  # every method verified
    # The small copy, faster per call but moving an eighth of the bytes, wins only when
    # its bytes per second are the most.
    fake.seconds["torch-copy-256MiB"] = 0.12e-3
    assert _best(fake).notes["memory_method"] == "torch-copy-256MiB"


def test_without_triton_its_method_is_skipped_with_a_note(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` raises ImportError
    monkeypatch.delitem(sys.modules, "kernbench.kernels.copy_triton", raising=False)
    fake = FakeCopies({"torch-copy-2048MiB": 1.0e-3, "torch-copy-256MiB": 0.13e-3})
    ceiling = _best(fake, calibrate_memory.triton_copy)  # the real builder
    assert "triton" in str(ceiling.notes["memory_triton_skipped"])
    assert ceiling.notes["memory_method"] == "torch-copy-2048MiB"
    assert "triton-copy-2048MiB" not in ceiling.rates_gbs


def test_a_method_whose_output_is_wrong_gives_no_ceiling() -> None:
    fake = FakeCopies({"torch-copy-2048MiB": 1.0e-3, "torch-copy-256MiB": 0.13e-3,
                       "triton-copy-2048MiB": 0.5e-3}, wrong=frozenset({"triton-copy-2048MiB"}))
    ceiling = _best(fake)
    assert ceiling.notes["memory_method"] == "torch-copy-2048MiB"  # not the faster triton
    assert "triton-copy-2048MiB" not in ceiling.rates_gbs
    assert str(ceiling.notes["memory_refused"]).startswith("triton-copy-2048MiB: output")


def test_no_verified_method_is_a_one_line_failure() -> None:
    names = {"torch-copy-2048MiB": 1e-3, "torch-copy-256MiB": 1e-3, "triton-copy-2048MiB": 1e-3}
    fake = FakeCopies(names, wrong=frozenset(names))
    with pytest.raises(UserError, match="no copy method gave a verified rate") as raised:
        _best(fake)
    assert raised.value.code == EXIT_FAILED


def test_the_cuda_methods_are_torch_at_two_sizes_and_triton() -> None:
    h200 = 150_754_820_096  # bytes, as torch reports it
    methods = [method.name for method, _ in calibrate_memory.cuda_methods(Sizes(), h200)]
    assert methods == ["torch-copy-4096MiB", "torch-copy-256MiB", "triton-copy-4096MiB"]


@pytest.mark.parametrize(("device_gib", "large_mib"), [(80, 4096), (24, 2048), (16, 2048),
                                                      (8, 1024), (1, 256)])
def test_the_large_copies_fit_in_half_the_device(device_gib: int, large_mib: int) -> None:
    methods = calibrate_memory.cuda_methods(Sizes(), device_gib << 30)
    assert [method.nbytes >> 20 for method, _ in methods] == [large_mib, 256, large_mib]


def test_the_cpu_memory_ceiling_names_its_method(monkeypatch) -> None:
    monkeypatch.setattr(calibrate_memory, "median_seconds", lambda run, reps: 0.25e-3)
    ceiling = calibrate_memory.memory_ceiling_cpu(Sizes(cpu_copy_bytes=1 << 20, reps=3))
    assert ceiling.gbs == 2 * (1 << 20) / 0.25e-3 / GB  # bytes read + written
    assert ceiling.rates_gbs == {"numpy-copy-1MiB": ceiling.gbs}
    assert ceiling.notes == {"memory_method": "numpy-copy-1MiB"}
