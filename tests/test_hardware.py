"""Hardware profiles: the shipped ones, and choosing one for a device."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.errors import SpecError, UserError
from kernbench.spec import hardware
from kernbench.spec.models import Ceiling, HardwareProfile

REPO = Path(__file__).resolve().parent.parent


def profile(name: str, kind: str, match: list[str]) -> HardwareProfile:
    return HardwareProfile(
        name=name,
        description=name,
        kind=kind,  # type: ignore[arg-type]
        match=match,
        memory_gbs=Ceiling(datasheet=1.0),
    )


PROFILES = {
    p.name: p
    for p in (
        profile("h200", "cuda", ["H200"]),
        profile("h200-nvl", "cuda", ["H200 NVL"]),
        profile("epyc", "cpu", ["EPYC"]),
        profile("cpu-generic", "cpu", []),
    )
}


def test_shipped_profiles() -> None:
    profiles = hardware.profiles_in([hardware.packaged_hardware_dir()])
    h200 = profiles["h200"]
    assert h200.kind == "cuda"
    # Calibrated on an H200: measured ceilings sit below the datasheet's, and are used.
    bf16 = h200.peak_tflops["bf16"]  # type: ignore[index]
    assert bf16.datasheet == 989.5
    assert bf16.measured is not None and 600 < bf16.measured < bf16.datasheet
    assert h200.peak("bf16") == bf16.measured
    assert h200.peak("fp64") == 67.0  # datasheet only: calibrate does not time fp64
    assert h200.memory_gbs.measured is not None and 3500 < h200.memory_gbs.value < 4800
    assert h200.calibration["device_name"] == "NVIDIA H200"
    assert h200.interconnect_gbs is not None and h200.interconnect_gbs.datasheet == 450.0
    generic = profiles["cpu-generic"]
    assert generic.kind == "cpu"
    # Nominal figures are not a datasheet: they must never make a fast result "invalid".
    assert all(c.datasheet is None for c in generic.peak_tflops.values())
    assert generic.memory_gbs.datasheet is None
    # ...and the figures call them what they are.
    source = hardware.ceiling_source
    assert source(generic, generic.memory_gbs) == "nominal"
    assert source(h200, bf16) == "measured"
    assert source(h200, h200.peak_tflops["fp64"]) == "datasheet"  # type: ignore[index]


def test_select_by_longest_match_case_insensitive() -> None:
    assert hardware.select_profile("NVIDIA H200", "cuda", profiles=PROFILES).name == "h200"
    assert hardware.select_profile("NVIDIA H200 NVL", "cuda", profiles=PROFILES).name == "h200-nvl"
    assert hardware.select_profile("AMD Epyc 9654", "cpu", profiles=PROFILES).name == "epyc"


def test_unknown_cpu_gets_the_generic_profile() -> None:
    chosen = hardware.select_profile("Intel Xeon", "cpu", profiles=PROFILES)
    assert chosen.name == "cpu-generic"
    assert hardware.select_profile("x86_64", "cpu").name == "cpu-generic"


def test_kind_must_match() -> None:
    with pytest.raises(UserError) as info:
        hardware.select_profile("EPYC H200", "cuda", profiles={"epyc": PROFILES["epyc"]})
    assert str(info.value) == (
        "no hardware profile matches cuda device 'EPYC H200'; known: epyc "
        "(pass --hardware NAME, or run kernbench calibrate)"
    )


def test_explicit_profile_wins() -> None:
    chosen = hardware.select_profile("NVIDIA H200", "cuda", "h200-nvl", profiles=PROFILES)
    assert chosen.name == "h200-nvl"
    with pytest.raises(UserError) as info:
        hardware.select_profile("NVIDIA H200", "cuda", "h100", profiles=PROFILES)
    assert str(info.value) == (
        "unknown hardware profile 'h100'; known: cpu-generic, epyc, h200, h200-nvl"
    )


def test_duplicate_profile_names(tmp_path: Path) -> None:
    folder = tmp_path / "configs" / "hardware"
    folder.mkdir(parents=True)
    text = "name: same\ndescription: d\nkind: cpu\nmemory_gbs: {measured: 1}\n"
    (folder / "a.yaml").write_text(text)
    (folder / "b.yaml").write_text(text)
    with pytest.raises(SpecError) as info:
        hardware.load_profiles(tmp_path)
    assert (
        str(info.value)
        == f"{folder / 'b.yaml'}:1: name: profile 'same' is also defined in {folder / 'a.yaml'}"
    )


def test_no_profile_folder_means_no_profiles(tmp_path: Path) -> None:
    assert hardware.load_profiles(tmp_path) == {}


def test_resolve_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardware, "detect_device", lambda: "cuda")
    assert hardware.resolve_device("auto") == "cuda"
    assert hardware.resolve_device("cpu") == "cpu"
    with pytest.raises(UserError) as info:
        hardware.resolve_device("tpu")
    assert str(info.value) == "unknown device 'tpu'; choose cpu, cuda or auto"


def test_detect_device_on_this_machine() -> None:
    assert hardware.detect_device() in ("cpu", "cuda")
