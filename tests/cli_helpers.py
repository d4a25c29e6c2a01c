"""What the command-line tests share: one way to invoke the CLI, one throwaway project."""

from __future__ import annotations

from pathlib import Path

import pytest
from time_limit import time_limit
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_USAGE, SpecError
from kernbench.spec import discovery
from kernbench.spec.loader import load_bench

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `kernbench ARGS`; never a traceback, never a hang."""
    with time_limit(30):
        result = runner.invoke(cli.app, list(args), env=env)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


def new_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bench_extra: str | None = ""
) -> Path:
    """A kernbench checkout of its own, the working folder, with benches alpha and beta
    (`bench_extra` appended to each; None: no benches) and no bench path from outside."""
    root = tmp_path / "proj"
    (root / "benches").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "kernbench"\n')
    for name in ("alpha", "beta") if bench_extra is not None else ():
        (root / "benches" / f"{name}.yaml").write_text(
            f"name: {name}\ndescription: the {name} bench\nkernel: sleep\n{bench_extra}"
        )
    monkeypatch.chdir(root)
    monkeypatch.delenv(discovery.BENCH_PATH_ENV, raising=False)
    return root


def nap_bench(folder: Path, extra: str = "", work_us: tuple[int, ...] = (1, 2)) -> Path:
    """A bench of short busy waits (the built-in `sleep`), quick to run for real."""
    folder.mkdir(parents=True, exist_ok=True)
    bench = folder / "nap.yaml"
    bench.write_text(
        "name: nap\ndescription: a short spin\nkernel: sleep\n"
        f"axes: {{work_us: [{', '.join(map(str, work_us))}]}}\n"
        "timer: {warmup_s: 0.0, budget_s: 0.01, min_samples: 3}\n" + extra
    )
    return bench


def spec_error_of(tmp_path: Path, text: str, name: str = "bench.yaml") -> str:
    """The one-line error of a bench file holding `text`, without its leading path."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert info.value.code == EXIT_USAGE
    return str(info.value).removeprefix(f"{path}:")
