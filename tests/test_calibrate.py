"""calibrate: the CPU measurement at tiny sizes, and profiles from injected measurements."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cli_helpers import invoke

from kernbench.commands.calibrate import calibrate_profile
from kernbench.errors import EXIT_USAGE, UserError
from kernbench.execute import calibrate, calibrate_setup, requirements
from kernbench.spec import hardware
from kernbench.spec.loader import load_bench, load_hardware
from kernbench.spec.models import Ceiling, HardwareProfile

BENCHES = Path(__file__).resolve().parents[1] / "benches"
TINY = calibrate_setup.Sizes(cpu_gemm=64, cpu_copy_bytes=1 << 20, reps=3)
NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)


def _datasheet() -> HardwareProfile:
    return HardwareProfile(
        name="h200",
        description="NVIDIA H200 SXM",
        kind="cuda",
        match=["H200"],
        peak_tflops={
            "bf16": Ceiling(datasheet=989.5, measured=700.0),
            "fp64": Ceiling(datasheet=67.0),
        },
        memory_gbs=Ceiling(datasheet=4800.0),
        host_to_device_gbs=Ceiling(datasheet=64.0),
        interconnect_gbs=Ceiling(datasheet=450.0),
        l2_bytes=50_000_000,
    )


def _measured() -> calibrate.Measured:
    return calibrate.Measured(
        device_name="NVIDIA H200",
        kind="cuda",
        peak_tflops={"bf16": 780.0, "fp8": 1250.0},
        memory_gbs=4250.0,
        host_to_device_gbs=55.0,
        device_to_host_gbs=54.0,
        l2_bytes=62914560,
        memory_bytes=150_000_000_000,
        method="injected",
        notes={"torch": "2.11.0"},
    )


def test_measured_figures_sit_beside_the_datasheet() -> None:
    profile = calibrate.profile_from(_measured(), datasheet=_datasheet(), now=NOW)
    assert profile.name == "h200" and profile.match == ["H200"]
    assert profile.peak_tflops["bf16"] == Ceiling(datasheet=989.5, measured=780.0)
    assert profile.peak_tflops["fp64"] == Ceiling(datasheet=67.0)  # not measured: kept
    assert profile.peak_tflops["fp8"] == Ceiling(measured=1250.0)  # measured only
    assert profile.memory_gbs == Ceiling(datasheet=4800.0, measured=4250.0)
    assert profile.host_to_device_gbs == Ceiling(datasheet=64.0, measured=55.0)
    assert profile.device_to_host_gbs == Ceiling(measured=54.0)
    assert profile.interconnect_gbs == Ceiling(datasheet=450.0)
    assert profile.l2_bytes == 62914560  # the device's own figure wins
    assert profile.calibration["date"] == "2026-11-20T12:00:00Z"
    assert profile.calibration["device_name"] == "NVIDIA H200"
    assert profile.calibration["torch"] == "2.11.0"


def test_without_a_datasheet_the_name_comes_from_the_device() -> None:
    profile = calibrate.profile_from(_measured(), now=NOW)
    assert profile.name == "nvidia-h200"
    assert profile.match == ["NVIDIA H200"]
    assert profile.peak_tflops["bf16"] == Ceiling(measured=780.0)
    assert calibrate.slug("Intel(R) Xeon(R) Platinum 8480+") == "intel-r-xeon-r-platinum-8480"


def test_written_profile_loads_back(tmp_path: Path) -> None:
    profile = calibrate.profile_from(_measured(), datasheet=_datasheet(), now=NOW)
    path = tmp_path / "configs" / "hardware" / "h200.yaml"
    calibrate.write_profile(profile, path)
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../../schemas/hardware.schema.json\n")
    assert load_hardware(path) == profile


def test_calibrate_uses_the_injected_measurement() -> None:
    profile = calibrate.calibrate("cuda", name="lab-h200", measure=lambda sizes: _measured())
    assert profile.name == "lab-h200"
    assert profile.peak("bf16") == 780.0
    with pytest.raises(ValueError, match="unknown device"):
        calibrate.calibrate("tpu")


def test_cpu_calibration_at_tiny_sizes(tmp_path: Path) -> None:
    profile = calibrate.calibrate("cpu", name="this-cpu", sizes=TINY)
    assert profile.kind == "cpu"
    assert set(profile.peak_tflops) == {"fp32", "fp64"}
    assert all(c.measured and c.measured > 0 for c in profile.peak_tflops.values())
    assert profile.memory_gbs.measured and profile.memory_gbs.measured > 0
    assert "numpy matmul 64^3" in str(profile.calibration["method"])
    calibrate.write_profile(profile, tmp_path / "cpu.yaml")
    assert load_hardware(tmp_path / "cpu.yaml").name == "this-cpu"


def test_the_duty_reaches_the_measurement_and_the_profile_says_it() -> None:
    asked: list[str] = []

    def measure(sizes: calibrate_setup.Sizes) -> calibrate.Measured:
        asked.append(sizes.duty)  # the timer's
        measured = _measured()
        measured.notes["duty"] = sizes.duty  # as measure_cuda records it
        return measured

    isolated = calibrate.calibrate("cuda", measure=measure, duty="isolated")
    sustained = calibrate.calibrate("cuda", measure=measure)
    assert asked == ["isolated", "sustained"]
    assert hardware.calibrated_duty(isolated) == "isolated"
    assert hardware.calibrated_duty(sustained) == "sustained"


def test_a_profile_calibrated_before_duties_reads_sustained_and_a_datasheet_none() -> None:
    calibrated = calibrate.profile_from(_measured(), datasheet=_datasheet(), now=NOW)
    assert "duty" not in calibrated.calibration
    assert hardware.calibrated_duty(calibrated) == "sustained"
    sheet_only = _datasheet().model_copy(update={
        "peak_tflops": {"bf16": Ceiling(datasheet=989.5)}})
    assert hardware.calibrated_duty(sheet_only) is None


def test_calibrate_refuses_an_unknown_duty_in_one_line() -> None:
    with pytest.raises(UserError, match="--duty: 'bursty' is not a duty; choose sustained or"):
        calibrate_profile("cpu", None, None, duty="bursty")


def test_a_run_says_when_its_duty_is_not_its_ceilings(monkeypatch, capsys) -> None:
    from kernbench.commands import run as run_command

    milestone = load_bench(BENCHES / "milestone-1h-gemm.yaml")
    bench, isolated = (milestone.model_copy(update={
        "timer": milestone.timer.model_copy(update={"duty": duty})})
        for duty in ("sustained", "isolated"))
    monkeypatch.setattr(run_command, "select_profile", lambda *args: _datasheet())
    run_command.note_ceilings_duty(bench, "cuda", None)
    assert capsys.readouterr().err == ""  # sustained against ceilings calibrated sustained
    run_command.note_ceilings_duty(isolated, "cuda", None)
    err = capsys.readouterr().err
    assert "times under the isolated duty; the ceilings of profile h200 were calibrated " \
        "under sustained" in err
    assert "writes h200-isolated" in err
    run_command.note_ceilings_duty(isolated, "cpu", None)
    assert capsys.readouterr().err == ""


def test_a_duty_variant_keeps_the_datasheet_and_matches_no_device(tmp_path, monkeypatch):
    from kernbench.commands import calibrate as command

    def measured(device, name, datasheet, sizes, duty):
        result = _measured()
        result.notes["duty"] = duty
        return calibrate.profile_from(result, name=name, datasheet=datasheet, now=NOW)

    monkeypatch.setattr(command, "calibrate", measured)
    monkeypatch.setattr(command, "device_model", lambda device: "NVIDIA H200")
    monkeypatch.setattr(requirements, "_cuda_available", lambda: True)
    path = command.calibrate_profile("cuda", tmp_path / "v.yaml", "h200-isolated", "isolated")
    variant = load_hardware(path)
    assert variant.name == "h200-isolated" and variant.match == []  # never auto-selected
    assert variant.peak_tflops["bf16"].datasheet == 989.5  # the shipped sheet's, kept
    assert hardware.calibrated_duty(variant) == "isolated"
    same = load_hardware(command.calibrate_profile("cuda", tmp_path / "h.yaml", None))
    assert same.name == "h200" and same.match == ["H200"]
    # No name given: a duty other than the default names the variant after the device's.
    named = command.calibrate_profile("cuda", tmp_path / "i.yaml", None, "isolated")
    assert load_hardware(named).name == "h200-isolated"


def test_a_bench_of_a_duty_reads_the_variant_calibrated_under_it() -> None:
    sustained = _datasheet().model_copy(update={
        "calibration": {"duty": "sustained"}, "peak_tflops": {"bf16": Ceiling(
            datasheet=989.5, measured=790.0)}})
    isolated = sustained.model_copy(update={
        "name": "h200-isolated", "match": [], "calibration": {"duty": "isolated"}})
    profiles = {"h200": sustained, "h200-isolated": isolated}

    def chosen(duty, table=profiles):
        return hardware.select_profile("NVIDIA H200", "cuda", profiles=table, duty=duty).name

    assert chosen("isolated") == "h200-isolated"
    assert chosen("sustained") == "h200"
    assert chosen(None) == "h200"
    assert chosen("isolated", {"h200": sustained}) == "h200"  # no variant: the device's
    assert hardware.select_profile(
        "NVIDIA H200", "cuda", "h200", profiles=profiles, duty="isolated").name == "h200"
    # A profile of datasheet figures alone gives way to its variant measured under the duty.
    sheet = _datasheet().model_copy(update={"peak_tflops": {"bf16": Ceiling(datasheet=989.5)}})
    assert chosen("isolated", {"h200": sheet, "h200-isolated": isolated}) == "h200-isolated"


def test_the_shipped_h200_has_an_isolated_variant_the_milestone_reads() -> None:
    from kernbench.execute.finish import select_profile

    bench = load_bench(BENCHES / "milestone-1h-gemm.yaml")
    assert bench.timer.duty == "isolated"
    assert select_profile(bench, "cuda", device_model="NVIDIA H200").name == "h200-isolated"


def test_the_cpu_has_no_duty_to_calibrate_under() -> None:
    with pytest.raises(UserError, match="the CPU timer has no duty"):
        calibrate_profile("cpu", None, None, duty="isolated")


def test_calibrate_bench_takes_the_bench_timer_and_rounds(monkeypatch, tmp_path) -> None:
    from kernbench.commands import calibrate as command

    seen: list[calibrate_setup.Sizes] = []

    def measured(device, name, datasheet, sizes, duty):
        seen.append(sizes)
        result = _measured()
        result.notes["duty"] = duty
        return calibrate.profile_from(result, name=name, datasheet=datasheet, now=NOW)

    monkeypatch.setattr(command, "calibrate", measured)
    monkeypatch.setattr(command, "device_model", lambda device: "NVIDIA H200")
    monkeypatch.setattr(requirements, "_cuda_available", lambda: True)
    path = command.calibrate_profile("cuda", tmp_path / "m.yaml", None,
                                     bench="milestone-1h-gemm")
    milestone = load_bench(BENCHES / "milestone-1h-gemm.yaml")
    assert seen[-1].timer == milestone.timer and seen[-1].rounds == milestone.rounds
    assert load_hardware(path).name == "h200-isolated"  # the bench's duty names the variant
    with pytest.raises(UserError, match="--duty: 'sustained' is not the duty of bench "
                       "milestone-1h-gemm"):
        command.calibrate_profile("cuda", None, None, "sustained", bench="milestone-1h-gemm")


def test_the_default_calibration_timer_is_the_milestone_cells_but_its_duty() -> None:
    """One sweep cell's timer: calibrating without --bench reads ceilings as the milestone
    reads its cells (ADR 0049); only the duty is the command's own."""
    milestone = load_bench(BENCHES / "milestone-1h-gemm.yaml").timer
    assert calibrate_setup.SWEEP_TIMER == milestone.model_copy(update={"duty": "sustained"})


def test_a_cpu_calibration_ignores_a_bench_timer(monkeypatch, tmp_path) -> None:
    from kernbench.commands import calibrate as command

    seen: list[calibrate_setup.Sizes] = []

    def measured(device, name, datasheet, sizes, duty):
        seen.append(sizes)
        return calibrate.profile_from(_measured(), name=name or "cpu", datasheet=datasheet,
                                      now=NOW)

    monkeypatch.setattr(command, "calibrate", measured)
    command.calibrate_profile("cpu", tmp_path / "c.yaml", "this-cpu", bench="milestone-1h-gemm")
    assert seen[-1].duty == "sustained"  # not the milestone's isolated: no GPU timer here


def test_calibrate_refuses_an_unknown_bench_in_one_line() -> None:
    with pytest.raises(UserError, match="unknown bench 'nope'"):
        calibrate_profile("cpu", None, None, bench="nope")


@pytest.mark.parametrize("name", ["Upper", "bad/x", "x" * 81])
def test_a_bad_profile_name_is_refused_before_measuring(monkeypatch, name) -> None:
    from kernbench.commands import calibrate as command

    def measured(*args: object, **kwargs: object) -> None:
        raise AssertionError("measured before --name was checked")

    monkeypatch.setattr(command, "calibrate", measured)
    code, out, err = invoke("calibrate", "--device", "cpu", "--name", name)
    assert (code, out) == (EXIT_USAGE, "") and err.count("\n") == 1
    assert err.startswith(f"--name: {name!r} is not a profile name: String should ")
