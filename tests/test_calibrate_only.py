"""`kernbench calibrate --only PART`: one part measured again, every other figure of the
profile kept byte for byte; the part's date and name recorded, its text in `method`
replaced; a bad part refused."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from cli_helpers import invoke

from kernbench.errors import EXIT_OK, EXIT_USAGE
from kernbench.execute import calibrate_only, requirements
from kernbench.execute.calibrate import Measured, calibrate
from kernbench.execute.calibrate_only import method_remeasured
from kernbench.execute.calibrate_setup import Sizes, method_parts, method_text
from kernbench.spec.hardware import packaged_hardware_dir
from kernbench.spec.loader import load_hardware


class FakeMeasure:
    """A measurement of the parts asked, remembering what it was asked; its `method`
    written as the real one is, each part's text "PART by the fake", timed by `timed`."""

    def __init__(self, timed: str = "CUDA events") -> None:
        self.asked: list[tuple[tuple[str, ...], str]] = []
        self.timed = timed

    def __call__(self, sizes: Sizes, parts: Sequence[str]) -> Measured:
        self.asked.append((tuple(parts), sizes.duty))
        method = method_text("cuda", [f"{part} by the fake" for part in parts],
                             f"{self.timed}, L2 flushed, {sizes.duty} duty")
        return Measured(device_name="NVIDIA H200", kind="cuda", method=method,
                        peak_tflops={"bf16": 800.0} if "gemm" in parts else {},
                        memory_gbs=4310.5 if "memory" in parts else None,
                        host_to_device_gbs=56.0 if "host" in parts else None,
                        device_to_host_gbs=57.0 if "host" in parts else None,
                        notes={"memory_method": "triton-copy-2048MiB"} if "memory" in parts
                        else {})


@pytest.fixture
def fake(monkeypatch) -> FakeMeasure:
    measure = FakeMeasure()
    monkeypatch.setattr(calibrate_only, "measure_cuda", measure)
    monkeypatch.setattr(requirements, "_cuda_available", lambda: True)
    return measure


def _copy(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    shutil.copy(packaged_hardware_dir() / f"{name}.yaml", path)
    return path


def _lines_outside(text: str, keys: tuple[str, ...]) -> list[str]:
    """The file's lines but those of top-level `keys` (a flow mapping may wrap lines)."""
    kept, skipping = [], False
    for line in text.splitlines():
        if not line.startswith(" "):
            skipping = line.split(":")[0] in keys
        if not skipping:
            kept.append(line)
    return kept


def test_only_memory_keeps_every_other_line(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200")
    before = path.read_text()
    code, out, err = invoke("calibrate", "--device", "cuda", "--only", "memory",
                            "--out", str(path))
    assert (code, err) == (EXIT_OK, ""), err
    assert out == f"wrote {path}\n"
    after = path.read_text()
    assert _lines_outside(after, ("memory_gbs", "calibration")) == \
        _lines_outside(before, ("memory_gbs", "calibration"))
    assert "memory_gbs: {datasheet: 4800.0, measured: 4310.5}" in after
    assert fake.asked == [(("memory",), "sustained")]
    profile, old = load_hardware(path), load_hardware(packaged_hardware_dir() / "h200.yaml")
    calibration = profile.calibration
    assert calibration["remeasured"] == ["memory"]
    assert str(calibration["memory_date"]).endswith("Z")
    assert calibration["memory_method"] == "triton-copy-2048MiB"
    # The shipped profile may itself have been re-measured: its own such keys are set aside.
    remeasure_keys = ("remeasured", "memory_date", "memory_method", "memory_methods", "method")
    assert {k: v for k, v in calibration.items() if k not in remeasure_keys} == \
        {k: v for k, v in old.calibration.items() if k not in remeasure_keys}
    # `method` says how memory was measured now; the GEMM's, the host's and the timing's
    # texts are the shipped profile's, byte for byte.
    (gemm, _, host), timed = method_parts("cuda", str(old.calibration["method"])) or ([], "")
    assert calibration["method"] == method_text("cuda", [gemm, "memory by the fake", host],
                                                timed)
    assert timed == "CUDA events, L2 flushed, sustained duty"


def test_a_part_timed_otherwise_says_so_in_method(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200")
    fake.timed = "CUPTI's kernel records"
    assert invoke("calibrate", "--device", "cuda", "--only", "host", "--out",
                  str(path))[0] == EXIT_OK
    old = load_hardware(packaged_hardware_dir() / "h200.yaml").calibration["method"]
    (gemm, memory, _), timed = method_parts("cuda", str(old)) or ([], "")
    host = "host by the fake (CUPTI's kernel records, L2 flushed, sustained duty)"
    assert load_hardware(path).calibration["method"] == method_text(
        "cuda", [gemm, memory, host], timed)


def test_a_method_no_calibration_wrote_keeps_its_text_and_adds_the_part() -> None:
    measured = "memory by the fake; CUDA events, L2 flushed, sustained duty"
    assert method_remeasured("cuda", "by hand", "memory", measured) == \
        f"by hand; then memory measured again: {measured}"
    assert method_remeasured("cuda", "", "memory", measured) == \
        f"memory measured again: {measured}"


def test_only_memory_on_the_cpu_replaces_its_text_in_method() -> None:
    tiny = Sizes(cpu_gemm=64, cpu_copy_bytes=1 << 20, reps=3)
    base = calibrate("cpu", name="this-cpu", sizes=tiny)
    again = calibrate_only.calibrate_only(base, "memory", replace(tiny, cpu_copy_bytes=2 << 20))
    gemm, timed = "numpy matmul 64^3", "median of 3 after one warm-up call"
    assert base.calibration["method"] == f"{gemm} and np.copyto of 1 MiB (read + write), {timed}"
    assert again.calibration["method"] == f"{gemm} and np.copyto of 2 MiB (read + write), {timed}"


def test_only_takes_the_duty_the_profile_was_calibrated_under(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200-isolated")
    code, _, err = invoke("calibrate", "--device", "cuda", "--only", "memory",
                          "--name", "h200-isolated", "--out", str(path))
    assert code == EXIT_OK, err
    assert fake.asked == [(("memory",), "isolated")]
    assert load_hardware(path).name == "h200-isolated"
    code, _, err = invoke("calibrate", "--device", "cuda", "--only", "memory",
                          "--duty", "sustained", "--out", str(path))
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert err.startswith("--duty: profile h200-isolated was calibrated under isolated")


def test_parts_measured_again_add_up(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200")
    for part in ("memory", "host"):
        assert invoke("calibrate", "--device", "cuda", "--only", part, "--out",
                      str(path))[0] == EXIT_OK
    profile = load_hardware(path)
    assert profile.calibration["remeasured"] == ["host", "memory"]
    assert "memory_date" in profile.calibration and "host_date" in profile.calibration
    assert profile.memory_gbs.measured == 4310.5  # kept by the host's measurement
    assert profile.host_to_device_gbs.measured == 56.0  # type: ignore[union-attr]
    shipped = load_hardware(packaged_hardware_dir() / "h200.yaml")
    assert profile.peak_tflops == shipped.peak_tflops  # no part measured the GEMMs


def test_only_gemm_replaces_the_measured_peaks_only(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200")
    assert invoke("calibrate", "--device", "cuda", "--only", "gemm", "--out",
                  str(path))[0] == EXIT_OK
    profile, old = load_hardware(path), load_hardware(packaged_hardware_dir() / "h200.yaml")
    assert profile.peak_tflops["bf16"].measured == 800.0
    assert profile.peak_tflops["bf16"].datasheet == 989.5
    assert old.peak_tflops["bf16"].measured != 800.0
    assert profile.peak_tflops["fp16"].measured == old.peak_tflops["fp16"].measured
    assert profile.memory_gbs.measured == old.memory_gbs.measured


def test_an_unknown_part_is_a_usage_error_before_measuring(tmp_path, fake) -> None:
    path = _copy(tmp_path, "h200")
    before = path.read_text()
    code, out, err = invoke("calibrate", "--device", "cuda", "--only", "disk",
                            "--out", str(path))
    assert (code, out) == (EXIT_USAGE, "")
    assert err == "--only: 'disk' is not a part of a calibration; choose gemm, memory or host\n"
    assert fake.asked == [] and path.read_text() == before


def test_the_cpu_has_no_host_part(tmp_path, monkeypatch) -> None:
    path = tmp_path / "cpu.yaml"
    path.write_text("name: lab-cpu\ndescription: a CPU\nkind: cpu\n"
                    "peak_tflops: {fp32: {measured: 1.0}}\nmemory_gbs: {measured: 10.0}\n")
    code, _, err = invoke("calibrate", "--device", "cpu", "--only", "host", "--out", str(path))
    assert code == EXIT_USAGE and err == "--only host: a CPU has no host link to measure\n"
