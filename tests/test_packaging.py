"""What a packager gets: the sdist builds a wheel that holds every file of the package
and the shipped benches (the repository's benches/ with their kernel modules, pins and the
committed data their `data:` fields name, nothing more), with no deprecated setting on the
way; the tests stay in the repository (MANIFEST.in).

Built offline, as tests/test_wheel_install.py builds (setuptools' backend called without
build isolation), in a copy, so the checkout is left untouched; about two seconds.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.skipif(importlib.util.find_spec("setuptools") is None,
                                reason="building offline needs setuptools installed")

REPO = Path(__file__).resolve().parent.parent
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")
SHIPPED = "kernbench/data/benches/"


def build(kind: str, source: Path, out: Path) -> Path:
    """`kind` ("sdist" or "wheel") of the project in `source`; any warning fails the build
    (`-W error`: a setting setuptools deprecates is found before it stops building)."""
    out.mkdir(exist_ok=True)
    call = f"from setuptools import build_meta; print(build_meta.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-W", "error", "-c", call], cwd=source,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[list[str], list[str], dict[str, str]]:
    """The sdist's file names (below its top folder), then those of the wheel built from
    the unpacked sdist, and the text of each of the wheel's .dist-info files by name."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "MANIFEST.in", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    for folder in ("kernbench", "tests", "benches"):  # benches/ whole: its big data stays out
        shutil.copytree(REPO / folder, source / folder, ignore=SKIPPED)
    sdist = build("sdist", source, work / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "unpacked", filter="data")
        sdist_names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    (unpacked,) = (work / "unpacked").iterdir()
    wheel = build("wheel", unpacked, work / "wheels")
    with zipfile.ZipFile(wheel) as archive:
        info = {name.split("/")[-1]: archive.read(name).decode()
                for name in archive.namelist() if ".dist-info/" in name}
        return sdist_names, archive.namelist(), info


def package_files() -> set[str]:
    return {path.relative_to(REPO).as_posix() for path in (REPO / "kernbench").rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def shipped_files() -> set[str]:
    """The repository's benches, kernel modules and pins, and the data files those benches
    name, as the wheel holds them."""
    benches = REPO / "benches"
    named = [yaml.safe_load(path.read_text()).get("data") for path in benches.glob("*.yaml")]
    files = [*benches.glob("*.yaml"), *benches.glob("*.py"), *benches.glob("pins/*.json"),
             *(benches / data for data in named if data)]
    return {SHIPPED + path.relative_to(benches).as_posix() for path in files}


def test_the_wheel_from_the_sdist_holds_every_file_of_the_package(built: tuple) -> None:
    _, wheel_names, _ = built
    packaged = {name for name in wheel_names if name.startswith("kernbench/")}
    assert packaged - shipped_files() == package_files()


def test_the_wheel_ships_the_benches_and_only_the_data_they_name(built: tuple) -> None:
    _, wheel_names, _ = built
    shipped = {name for name in wheel_names if name.startswith(SHIPPED)}
    assert shipped == shipped_files()
    assert {SHIPPED + "milestone-1h-gemm.yaml", SHIPPED + "pins/milestone-1h-gemm.json",
            SHIPPED + "data/milestone-1h-gemm.json.xz"} <= shipped


def test_the_sdist_leaves_out_the_tests_whose_data_stays_in_the_repository(built: tuple) -> None:
    sdist_names, _, _ = built
    assert not [name for name in sdist_names if name.startswith("tests")]
    assert package_files() <= set(sdist_names)


def test_the_metadata_names_the_license_as_an_spdx_expression(built: tuple) -> None:
    _, _, info = built
    assert "License-Expression: Apache-2.0" in info["METADATA"].splitlines()
    assert "Requires-Python: >=3.10" in info["METADATA"].splitlines()
    # Apache-2.0 asks that a copy of the license go with every distribution.
    assert "License-File: LICENSE" in info["METADATA"].splitlines()
    assert info["LICENSE"].lstrip().startswith("Apache License\n")


def test_the_wheel_holds_the_package_and_its_metadata_only(built: tuple) -> None:
    _, wheel_names, _ = built
    dist_info = f"kernbench-{version('kernbench')}.dist-info"
    assert {name.split("/")[0] for name in wheel_names} == {"kernbench", dist_info}


def test_the_core_installs_without_torch_and_the_extras_bring_it(built: tuple) -> None:
    """torch, Triton, NVML and FlagGems only through an extra: a core install must not
    pull a multi-GB CUDA build; the command is the `kernbench` script."""
    _, _, info = built
    lines = info["METADATA"].splitlines()
    core = [line for line in lines if line.startswith("Requires-Dist:") and "extra ==" not in line]
    optional = ("torch", "triton", "nvidia-ml-py", "flag-gems")
    assert core and not [line for line in core if line.split()[1].startswith(optional)]
    assert {"Provides-Extra: torch", "Provides-Extra: gpu", "Provides-Extra: test"} <= set(lines)
    assert 'Requires-Dist: torch>=2.4; extra == "torch"' in lines
    assert "kernbench = kernbench.__main__:main" in info["entry_points.txt"].splitlines()
