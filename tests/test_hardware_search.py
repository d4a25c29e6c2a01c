"""Where hardware profiles are found: the project's configs/hardware, then
KERNBENCH_CONFIG_PATH, then the profiles shipped in the package; and `--hardware NAME`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_USAGE, SpecError, UserError
from kernbench.execute import finish
from kernbench.spec import discovery, hardware
from kernbench.spec.loader import load_bench

SHIPPED = ("cpu-generic", "h100", "h100-isolated", "h200", "h200-isolated")


def write_profile(folder: Path, name: str, description: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ndescription: {description}\nkind: cpu\nmatch: [{name}]\n"
        "memory_gbs: {measured: 1.0}\n"
    )
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    (root / "benches").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "kernbench"\n')
    monkeypatch.chdir(root)
    monkeypatch.delenv(hardware.CONFIG_PATH_ENV, raising=False)
    return root


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed wheel run from a plain folder: no checkout anywhere."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(discovery, "source_tree", lambda: None)
    monkeypatch.delenv(hardware.CONFIG_PATH_ENV, raising=False)
    return folder


def test_the_shipped_profiles_are_found_outside_any_checkout(installed: Path) -> None:
    assert discovery.checkout_root() is None
    assert discovery.project_root() == installed.resolve()
    assert hardware.profile_dirs() == [hardware.packaged_hardware_dir()]
    assert set(hardware.load_profiles()) == set(SHIPPED)
    assert hardware.select_profile("AMD EPYC 9654", "cpu").name == "cpu-generic"
    h100 = hardware.select_profile("NVIDIA H100 80GB HBM3", "cuda")
    assert h100.name == "h100" and h100.memory_gbs.datasheet == 3350.0
    assert hardware.select_profile(
        "NVIDIA H100 80GB HBM3", "cuda", duty="isolated").name == "h100-isolated"
    with pytest.raises(UserError, match="no hardware profile matches cuda device"):
        hardware.select_profile("NVIDIA H100 PCIe", "cuda")  # other peaks: not the SXM's


def test_project_then_config_path_then_shipped(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_profile(project / "configs" / "hardware", "h200", "the project's own h200")
    write_profile(tmp_path / "site" / "hardware", "h200", "the site's h200")
    write_profile(tmp_path / "site" / "hardware", "lab-epyc", "the site's EPYC")
    write_profile(tmp_path / "more" / "hardware", "lab-epyc", "another EPYC")
    paths = f"{tmp_path / 'site'}:{tmp_path / 'missing'}:{tmp_path / 'more'}"
    monkeypatch.setenv(hardware.CONFIG_PATH_ENV, paths)
    assert hardware.profile_dirs() == [
        project / "configs" / "hardware",
        tmp_path / "site" / "hardware",
        tmp_path / "more" / "hardware",
        hardware.packaged_hardware_dir(),
    ]
    profiles = hardware.load_profiles()
    assert set(profiles) == {*SHIPPED, "lab-epyc"}
    assert profiles["h200"].description == "the project's own h200"
    assert profiles["lab-epyc"].description == "the site's EPYC"
    # validate sees every file, hidden or not.
    assert len(hardware.profile_files()) == 4 + len(SHIPPED)


def test_a_duplicate_inside_one_folder_is_still_an_error(project: Path) -> None:
    folder = project / "configs" / "hardware"
    write_profile(folder, "a", "first")
    (folder / "b.yaml").write_text((folder / "a.yaml").read_text())
    with pytest.raises(SpecError, match="profile 'a' is also defined in"):
        hardware.load_profiles()


def test_an_explicit_profile_wins_over_the_bench(project: Path) -> None:
    write_profile(project / "configs" / "hardware", "lab-epyc", "the lab's EPYC")
    bench = project / "benches" / "b.yaml"
    bench.write_text("name: b\ndescription: d\nkernel: sleep\nhardware: cpu-generic\n")
    loaded = load_bench(bench)
    by_bench = finish.select_profile(loaded, "cpu")
    by_option = finish.select_profile(loaded, "cpu", "lab-epyc")
    assert by_bench is not None and by_bench.name == "cpu-generic"
    assert by_option is not None and by_option.name == "lab-epyc"


def test_run_refuses_an_unknown_hardware_name_before_measuring(project: Path) -> None:
    bench = project / "benches" / "b.yaml"
    bench.write_text(textwrap.dedent("""\
        name: b
        description: d
        kernel: sleep
        axes: {us: [1]}
        """))
    result = CliRunner().invoke(
        cli.app, ["run", "--bench", str(bench), "--device", "cpu", "--hardware", "b300"]
    )
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == ("unknown hardware profile 'b300'; known: cpu-generic, h100, "
                             "h100-isolated, h200, h200-isolated\n")
    assert not (project / "runs").exists()


def test_run_refuses_another_devices_profile_before_measuring(project: Path) -> None:
    bench = project / "benches" / "b.yaml"
    bench.write_text("name: b\ndescription: d\nkernel: sleep\naxes: {us: [1]}\n")
    result = CliRunner().invoke(
        cli.app, ["run", "--bench", str(bench), "--device", "cpu", "--hardware", "h100"]
    )
    assert result.exit_code == EXIT_USAGE
    assert result.stderr == "hardware profile 'h100' is for cuda devices; this run is on cpu\n"
    assert not (project / "runs").exists()


def test_a_bench_naming_another_devices_profile_is_refused_at_its_line(project: Path) -> None:
    bench = project / "benches" / "b.yaml"
    bench.write_text("name: b\ndescription: d\nkernel: sleep\nhardware: h200\naxes: {us: [1]}\n")
    result = CliRunner().invoke(cli.app, ["run", "--bench", str(bench), "--device", "cpu"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.endswith("b.yaml:4: hardware: hardware profile 'h200' is for cuda "
                                  "devices; this run is on cpu\n")
    assert not (project / "runs").exists()
    assert CliRunner().invoke(cli.app, ["validate", str(bench)]).exit_code == 0  # no device
