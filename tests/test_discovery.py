"""Finding benches, and custom kernels dropped beside them with no code change."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernbench import cli
from kernbench.errors import EXIT_USAGE, SpecError, UserError
from kernbench.execute.pins import bench_source_hash, fingerprint, source_hash
from kernbench.kernels import BUILTINS, FactoryError, kernel_source_path, resolve_factory
from kernbench.plan import plan
from kernbench.spec import discovery
from kernbench.spec.loader import load_bench
from kernbench.spec.op_factory import OpFactory, bench_factory, bench_source

REPO = Path(__file__).resolve().parent.parent
CUSTOM = Path(__file__).resolve().parent / "fixtures" / "custom"


def bench_text(name: str, description: str = "d") -> str:
    return f"name: {name}\ndescription: {description}\nkernel: sleep\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernbench checkout of its own, as the working directory."""
    root = tmp_path / "proj"
    (root / "benches").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "kernbench"\nversion = "0"\n')
    (root / "benches" / "alpha.yaml").write_text(bench_text("alpha"))
    (root / "benches" / "beta.yml").write_text(bench_text("beta"))
    (root / "benches" / "notes.txt").write_text("not a bench")
    monkeypatch.chdir(root / "benches")
    monkeypatch.delenv(discovery.BENCH_PATH_ENV, raising=False)
    return root


def test_project_root_walks_up_from_the_working_directory(project: Path) -> None:
    assert discovery.project_root() == project


def test_project_root_ignores_other_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "benches").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    monkeypatch.chdir(tmp_path)
    assert discovery.project_root() == REPO


def test_discovery_reads_yaml_and_yml(project: Path) -> None:
    assert discovery.benches_by_name() == {
        "alpha": [project / "benches" / "alpha.yaml"],
        "beta": [project / "benches" / "beta.yml"],
    }


def test_bench_dirs_order_and_env(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra, env_a, env_b = (tmp_path / n for n in ("extra", "env_a", "env_b"))
    for folder in (extra, env_a, env_b):
        folder.mkdir()
    monkeypatch.setenv(discovery.BENCH_PATH_ENV, f"{env_a}:{tmp_path / 'missing'}:{env_b}:")
    dirs = discovery.bench_dirs([extra, project / "benches"])
    assert dirs == [project / "benches", extra, env_a, env_b]


def test_missing_bench_dir_is_a_user_error(project: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        discovery.bench_dirs([tmp_path / "nope"])
    assert str(info.value) == f"--bench-dir {tmp_path / 'nope'}: not a folder"


def test_env_path_adds_benches(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "gamma.yaml").write_text(bench_text("gamma"))
    monkeypatch.setenv(discovery.BENCH_PATH_ENV, str(tmp_path / "more"))
    assert list(discovery.benches_by_name()) == ["alpha", "beta", "gamma"]


def test_duplicate_names_across_files(project: Path, tmp_path: Path) -> None:
    (tmp_path / "more").mkdir()
    other = tmp_path / "more" / "copy.yaml"
    other.write_text("# same name\n" + bench_text("alpha"))
    clash = discovery.name_clash("alpha", discovery.benches_by_name([tmp_path / "more"])["alpha"])
    assert str(clash) == f"{other}:2: name: bench 'alpha' is also defined in alpha.yaml"


def test_validate_searches_the_bench_folders_once(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[object] = []
    search = discovery.bench_dirs
    monkeypatch.setattr(discovery, "bench_dirs", lambda extra=(): searched.append(extra) or
                        search(extra))
    result = CliRunner().invoke(cli.app, ["validate"])
    assert result.exit_code == 0, result.output
    assert "ok " in result.stdout and len(searched) == 1


def test_a_name_defined_twice_is_refused_by_every_command_but_list(
    project: Path, tmp_path: Path
) -> None:
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tiny.yaml").write_text(bench_text("tiny"))
    dirs = ["--bench-dir", str(tmp_path / "one"), "--bench-dir", str(tmp_path / "two")]
    expected = (
        f"{tmp_path / 'two' / 'tiny.yaml'}:1: name: bench 'tiny' is also defined in "
        f"{tmp_path / 'one' / 'tiny.yaml'}"
    )
    for command in (["plan", "--bench", "tiny"], ["run", "--bench", "tiny", "--fast"],
                    ["validate"]):
        result = CliRunner().invoke(cli.app, [*command, *dirs])
        assert (result.exit_code, result.stderr.strip()) == (EXIT_USAGE, expected), command
    listed = CliRunner().invoke(cli.app, ["list", *dirs])
    assert listed.exit_code == 0
    assert f"tiny   (invalid: {expected})" in listed.stdout.splitlines()


def test_validate_of_a_folder_refuses_two_files_of_a_name_as_plan_does(
    project: Path, tmp_path: Path
) -> None:
    """`validate FOLDER` said ok for both files, which `plan --bench-dir FOLDER` refuses;
    a bench name standing for both files likewise."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.yaml").write_text(bench_text("tiny"))
    (mine / "b.yaml").write_text(bench_text("tiny"))
    expected = f"{mine / 'b.yaml'}:1: name: bench 'tiny' is also defined in {mine / 'a.yaml'}"
    planned = CliRunner().invoke(cli.app, ["plan", "--bench", "tiny", "--bench-dir", str(mine)])
    assert (planned.exit_code, planned.stderr.strip()) == (EXIT_USAGE, expected)
    for args in ([str(mine)], ["tiny", "--bench-dir", str(mine)]):
        result = CliRunner().invoke(cli.app, ["validate", *args])
        assert (result.exit_code, result.stderr.strip()) == (EXIT_USAGE, expected), args
    result = CliRunner().invoke(cli.app, ["validate", str(mine / "a.yaml"), "alpha"])
    assert result.exit_code == 0, result.output  # files of other names: no clash


def test_a_copied_bench_file_hides_no_other_bench(project: Path) -> None:
    """`cp alpha.yaml copy.yaml`: list shows every other bench, and the name as invalid
    naming both files; another name still plans."""
    benches = project / "benches"
    shutil.copy(benches / "alpha.yaml", benches / "copy.yaml")
    (benches / "copy2.yaml").write_text(bench_text("alpha"))
    result = CliRunner().invoke(cli.app, ["list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "alpha  (invalid: copy.yaml:1: name: bench 'alpha' is also defined in alpha.yaml "
        "and copy2.yaml)",
        "beta   d",
    ]
    assert discovery.find_bench("beta")[0].name == "beta"
    with pytest.raises(UserError, match="unknown bench 'gamma'; known: alpha, beta"):
        discovery.find_bench("gamma")
    planned = CliRunner().invoke(cli.app, ["plan", "--bench", "beta"])
    assert planned.exit_code == 0, planned.output


def test_a_bench_dir_bench_named_like_a_project_one_is_refused(
    project: Path, tmp_path: Path
) -> None:
    (tmp_path / "mine").mkdir()
    mine = tmp_path / "mine" / "alpha.yaml"
    mine.write_text(bench_text("alpha", "mine"))
    with pytest.raises(SpecError) as info:
        discovery.find_bench("alpha", [tmp_path / "mine"])
    assert str(info.value) == f"{mine}:1: name: bench 'alpha' is also defined in alpha.yaml"


def test_broken_file_does_not_hide_the_others(project: Path) -> None:
    (project / "benches" / "zeta.yaml").write_text("name: [unclosed\n")
    (project / "benches" / "eta.yaml").write_text("- a list\n")
    assert list(discovery.benches_by_name()) == ["alpha", "beta", "eta", "zeta"]
    with pytest.raises(SpecError):
        discovery.find_bench("zeta")


def test_find_bench_by_name_and_by_path(project: Path) -> None:
    bench, path = discovery.find_bench("alpha")
    assert (bench.name, path) == ("alpha", project / "benches" / "alpha.yaml")
    bench, path = discovery.find_bench("beta.yml")
    assert (bench.name, path) == ("beta", Path("beta.yml"))


def test_unknown_bench_lists_the_known_ones(project: Path) -> None:
    with pytest.raises(UserError) as info:
        discovery.find_bench("alpah")
    assert str(info.value) == "unknown bench 'alpah'; did you mean 'alpha'? known: alpha, beta"
    with pytest.raises(UserError) as info:
        discovery.find_bench("gone.yaml")
    assert str(info.value) == "gone.yaml: bench file not found"
    for there in ("/dev/null", str(project)):  # there, but not a bench file
        with pytest.raises(UserError) as info:
            discovery.find_bench(there)
        assert str(info.value) == f"{there}: cannot read: not a regular file"


def test_an_installed_kernbench_outside_a_checkout_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(discovery, "source_tree", lambda: None)  # a wheel, not a checkout
    monkeypatch.delenv(discovery.BENCH_PATH_ENV, raising=False)
    said = (f"no benches found in {tmp_path.resolve() / 'benches'}, --bench-dir, "
            "KERNBENCH_BENCH_PATH (give a bench file's path, or run from a kernbench "
            "checkout)\n")
    runner = CliRunner()
    ran = runner.invoke(cli.app, ["run", "--bench", "milestone-1h-gemm"])
    assert (ran.exit_code, ran.stderr) == (EXIT_USAGE, "unknown bench 'milestone-1h-gemm'; " + said)
    for command in (["list"], ["validate"]):
        listed = runner.invoke(cli.app, command)
        assert (listed.exit_code, listed.stderr) == (0, said), command
    assert runner.invoke(cli.app, ["list", "--json"]).stdout == "[]\n"


@pytest.fixture
def wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed wheel, run from a plain folder: its shipped benches are `alpha` and
    `gamma`; the folder's own benches/ holds another `alpha`. Returns the plain folder."""
    shipped = tmp_path / "site-packages" / "benches"
    shipped.mkdir(parents=True)
    (shipped / "alpha.yaml").write_text(bench_text("alpha", "shipped"))
    (shipped / "gamma.yaml").write_text(bench_text("gamma", "shipped"))
    here = tmp_path / "work"
    (here / "benches").mkdir(parents=True)
    (here / "benches" / "mine.yaml").write_text(bench_text("alpha", "mine"))
    monkeypatch.chdir(here)
    monkeypatch.setattr(discovery, "source_tree", lambda: None)
    monkeypatch.setattr(discovery, "shipped_bench_dir", lambda: shipped)
    monkeypatch.delenv(discovery.BENCH_PATH_ENV, raising=False)
    return here


def test_the_shipped_benches_come_last_and_a_bench_of_their_name_shadows_them(
    wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "site-packages" / "benches"
    assert discovery.benches_by_name() == {"alpha": [wheel / "benches" / "mine.yaml"],
                                           "gamma": [shipped / "gamma.yaml"]}
    assert discovery.find_bench("gamma")[1] == shipped / "gamma.yaml"
    env = tmp_path / "env"
    env.mkdir()
    (env / "g.yaml").write_text(bench_text("gamma", "from the path variable"))
    monkeypatch.setenv(discovery.BENCH_PATH_ENV, str(env))
    bench, path = discovery.find_bench("gamma")
    assert (bench.description, path) == ("from the path variable", env / "g.yaml")
    listed = CliRunner().invoke(cli.app, ["list"])
    assert listed.stdout.splitlines() == ["alpha  mine", "gamma  from the path variable"]
    validated = CliRunner().invoke(cli.app, ["validate"])
    assert validated.exit_code == 0, validated.output
    checked = [line for line in validated.stdout.splitlines() if "hardware" not in line]
    assert checked == ["ok benches/mine.yaml", f"ok {env / 'g.yaml'}"]  # no shadowed one


def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files discovery parses from now on, one entry a parse."""
    reads: list[Path] = []
    read = discovery.read_document

    def counted(path: Path) -> object:
        reads.append(Path(path))
        return read(path)

    monkeypatch.setattr(discovery, "read_document", counted)
    return reads


def test_benches_by_name_reads_each_file_once_beside_shipped_benches(
    wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = parses(monkeypatch)
    assert sorted(discovery.benches_by_name()) == ["alpha", "gamma"]
    assert len(reads) == len(set(reads)) == 3  # mine, and the shipped alpha and gamma


def test_an_unknown_name_beside_shipped_benches_reads_each_file_once(
    wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = parses(monkeypatch)
    with pytest.raises(UserError, match="^unknown bench 'delta'; known: alpha, gamma$"):
        discovery.find_bench("delta")
    assert len(reads) == len(set(reads)) == 3  # the shadowing names, then the known ones


def test_a_checkout_does_not_search_the_shipped_benches(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "gamma.yaml").write_text(bench_text("gamma"))
    monkeypatch.setattr(discovery, "shipped_bench_dir", lambda: tmp_path / "shipped")
    assert list(discovery.benches_by_name()) == ["alpha", "beta"]


def test_save_pins_is_refused_for_a_shipped_bench(wheel: Path, tmp_path: Path) -> None:
    ran = CliRunner().invoke(cli.app, ["run", "--bench", "gamma", "--save-pins"])
    shipped = tmp_path / "site-packages" / "benches"
    assert (ran.exit_code, ran.stderr) == (
        EXIT_USAGE, f"--save-pins: gamma is shipped with kernbench, which is not written to; "
        f"copy {shipped} to ./benches (a bench there shadows the shipped one of its name) "
        "and save its pins there\n")
    assert not (wheel / "runs").exists() and not (shipped / "pins").exists()


def test_dropped_in_bench_is_listed_validated_and_planned(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    shutil.copytree(CUSTOM, folder)
    assert "custom-sum" in discovery.benches_by_name([folder])
    bench, path = discovery.find_bench("custom-sum", [folder])
    cells = plan(bench, "cpu")
    assert [cell.id for cell in cells] == [
        "once/n=10,shape=2x3",
        "once/n=100,shape=2x3",
        "once/n=1000,shape=2x3",
        "twice/n=10,shape=2x3",
        "twice/n=100,shape=2x3",
    ]
    factory = resolve_factory(bench.kernel, path.parent)
    run = factory(**cells[4].params)
    assert run() == sum(range(200))
    assert run.params == {"n": 100, "rows": 2, "cols": 3, "scale": 2, "device": "cpu"}
    assert kernel_source_path(bench.kernel, path.parent) == (folder / "mymod.py").resolve()


def test_local_module_does_not_shadow_or_replace_an_imported_one(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("def make(**params):\n    return lambda: 'local'\n")
    factory = resolve_factory("json:make", tmp_path)
    assert factory()() == "local"
    assert sys.modules["json"] is json
    assert str(tmp_path) not in sys.path


def test_local_module_may_import_its_helpers(tmp_path: Path) -> None:
    (tmp_path / "helper_kb.py").write_text("VALUE = 7\n")
    (tmp_path / "user_kb.py").write_text(
        "import helper_kb\n\ndef make(**params):\n    return lambda: helper_kb.VALUE\n"
    )
    assert resolve_factory("user_kb:make", tmp_path)()() == 7


def test_factory_from_sys_path_when_not_beside_the_bench(tmp_path: Path) -> None:
    assert resolve_factory("kernbench.plan:plan", tmp_path) is plan


def test_builtins_resolve_lazily_to_files() -> None:
    assert set(BUILTINS) == {"gemm", "collective", "sleep"}
    path = kernel_source_path("gemm", REPO)
    assert path is not None and path.name == "gemm.py" and path.parent.name == "kernels"
    assert kernel_source_path("nope_kb_mod:make", REPO) is None
    assert kernel_source_path("unknown", REPO) is None


def test_unknown_kernel_name_is_a_factory_error(tmp_path: Path) -> None:
    with pytest.raises(FactoryError) as info:
        resolve_factory("gemmm", tmp_path)
    assert str(info.value) == (
        "unknown kernel 'gemmm'; built-in: collective, gemm, sleep (or give module:factory)"
    )


MYOPS = "def scaled_add(x, y, alpha):\n    return x + alpha * y\n"
MYOP_BENCH = (
    "name: myop\n"
    "op: myops.scaled_add\n"
    "axes:\n"
    "  n: [1024]\n"
    "dtypes: [fp32]\n"
    "inputs:\n"
    "  x: {shape: [n], init: randn}\n"
    "  y: {shape: [n], init: randn}\n"
    "args: {alpha: 2.0}\n"
)


def test_an_op_in_a_module_beside_the_bench_resolves_as_a_kernel_does(tmp_path: Path) -> None:
    """`op: myops.scaled_add` with `myops.py` beside the YAML: found without PYTHONPATH,
    its keywords checked, its file fingerprinting the bench's pins."""
    folder = tmp_path / "ops"
    folder.mkdir()
    (folder / "myops.py").write_text(MYOPS)
    path = folder / "myop.yaml"
    path.write_text(MYOP_BENCH)
    bench = load_bench(path)
    factory = bench_factory(bench, folder)
    assert isinstance(factory, OpFactory) and factory.op(x=1, y=2, alpha=3) == 7
    assert "myops" not in sys.modules and str(folder) not in sys.path
    assert bench_source(bench, folder) == (folder / "myops.py").resolve()
    assert bench_source_hash(bench, folder) == source_hash([folder / "myops.py"])
    path.write_text(MYOP_BENCH.replace("{alpha: 2.0}", "{alpha: 2.0, beta: 1}"))
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert str(info.value) == (
        f"{path}:9: args.beta: myops.scaled_add takes no 'beta'; it takes alpha, x, y"
    )


def test_a_library_op_pins_by_the_hash_of_no_file_and_records_none_to_resume_by() -> None:
    """A library's op has no module of its own (the library versions fingerprint it): its
    pins keep the hash they always had, and run.json no kernel module for --resume."""
    bench = load_bench(REPO / "benches" / "ops-moe-topk.yaml")
    assert bench_source_hash(bench, REPO / "benches") is None
    assert fingerprint("torch.topk", None, "cpu")["source_hash"] == source_hash([])


def test_an_op_module_not_beside_the_bench_is_still_an_import_error(tmp_path: Path) -> None:
    path = tmp_path / "myop.yaml"
    path.write_text(MYOP_BENCH)
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert str(info.value) == f"{path}:2: op: cannot import 'myops': no module named 'myops'"


def test_an_unknown_name_says_when_the_working_folders_benches_hold_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an editable install, `benches/` of the folder kernbench runs from is not
    searched: a bench there was only "unknown", the list naming the checkout's."""
    mine = tmp_path / "mine"
    (mine / "benches").mkdir(parents=True)
    (mine / "benches" / "own.yaml").write_text(bench_text("own"))
    monkeypatch.chdir(mine)
    with pytest.raises(UserError) as info:
        discovery.find_bench("own")
    assert str(info.value).endswith(
        f"; benches/ here is not searched (this kernbench reads "
        f"{discovery.project_root() / 'benches'}): give --bench-dir benches, or the file: "
        f"--bench {Path('benches', 'own.yaml')}")
    with pytest.raises(UserError) as info:
        discovery.find_bench("other")
    assert "here is not searched" not in str(info.value)
    assert discovery.find_bench("own", [Path("benches")])[0].name == "own"


def test_an_unknown_name_says_when_the_working_folder_itself_holds_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new user writes softmax.yaml (name: my-softmax) and runs from its folder: the
    # name was only "unknown", by its bench name or by its file's.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "softmax.yaml").write_text(bench_text("my-softmax"))
    monkeypatch.chdir(mine)
    unsearched = ("; this folder is not searched (this kernbench reads "
                  f"{discovery.project_root() / 'benches'})")
    with pytest.raises(UserError) as info:
        discovery.find_bench("my-softmax")
    assert str(info.value).endswith(
        f"{unsearched}: give --bench-dir ., or the file: --bench softmax.yaml")
    with pytest.raises(UserError) as info:
        discovery.find_bench("softmax")
    assert str(info.value).endswith(
        f"{unsearched}, and softmax.yaml names its bench 'my-softmax': give the file: "
        "--bench softmax.yaml")
