"""`op:` benches at validate: the issue's form is accepted, and a bad op path, shape name,
argument name, init, backend or reference is a `PATH:LINE: field: message` error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernbench.errors import EXIT_USAGE, SpecError
from kernbench.kernels.callables import Outputs, known_outputs
from kernbench.spec.loader import load_bench

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent
# The issue's example, as it stands.
TOPK = (
    "name: topk\n"
    "op: torch.topk\n"
    "axes:\n"
    "  rows: [64, 1024]\n"
    "  cols: [4096, 65536]\n"
    "  k: [8, 256]\n"
    "dtypes: [fp32, bf16]\n"
    "inputs:\n"
    "  input: {shape: [rows, cols], init: randn}      "
    "# dtype: the cell's dtype unless given; device: the cell's\n"
    "args: {k: k, dim: -1}\n"
    "metrics:\n"
    "  bytes: rows*cols*itemsize\n"
)


def error_of(folder: Path, text: str) -> str:
    path = folder / "bench.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_bench(path)
    return str(info.value).removeprefix(f"{path}:")


def test_the_issue_topk_bench_validates(tmp_path: Path) -> None:
    path = tmp_path / "topk.yaml"
    path.write_text(TOPK)
    bench = load_bench(path)
    assert bench.op == "torch.topk" and bench.kernel is None
    assert bench.description == "torch.topk"  # an op bench may leave it out
    assert bench.kernel_name == "op:torch.topk"
    assert bench.inputs["input"].shape == ["rows", "cols"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("op: torch.topk", "op: torch.topq"),
         "2: op: 'torch' has no attribute 'topq'; did you mean torch.topk?"),
        (
            ("op: torch.topk", "op: nosuchlib.topk"),
            "2: op: cannot import 'nosuchlib': no module named 'nosuchlib'",
        ),
        (("op: torch.topk", "op: topk"), "2: op: String should match pattern"),
        (
            ("[rows, cols]", "[rows, colz]"),
            "9: inputs.input.shape.1: unknown name 'colz'; known: cols, itemsize, k, rows",
        ),
        (
            ("[rows, cols]", "[rows, 'cols.real']"),
            "9: inputs.input.shape.1: Attribute is not allowed",
        ),
        (
            ("dim: -1", "dimm: -1"),
            "10: args.dimm: torch.topk takes no 'dimm'; it takes dim, input, k, largest, out, "
            "sorted",
        ),
        (("k: k,", "k: kk,"), "10: args.k: unknown name 'kk'"),
        (("{k: k, dim: -1}", "{dim: -1}"), "2: op: torch.topk needs 'k'; neither `inputs` nor "
         "`args` gives it"),
        (
            ("init: randn", "init: randint(3)"),
            "9: inputs.input.init: randint takes 2 arguments, not 1 (got 'randint(3)')",
        ),
        (("init: randn", "init: gauss"), "9: inputs.input.init: unknown init 'gauss'"),
        (
            ("input: {", "inp: {"),
            "9: inputs.inp: torch.topk takes no 'inp'; it takes dim, input, k, largest, out, "
            "sorted",
        ),
        (("dtypes: [fp32, bf16]\n", ""), "8: inputs.input: no dtype: give one here or a `dtypes`"),
    ],
)
def test_mistakes_are_errors_with_their_line(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    assert change[0] in TOPK
    assert error_of(tmp_path, TOPK.replace(*change)).startswith(expected)


def test_variants_choose_a_known_backend_only(tmp_path: Path) -> None:
    unknown = TOPK + "variants: {fast: {backend: cuda_graphs}}\n"
    assert error_of(tmp_path, unknown) == (
        "13: variants.fast.backend: unknown backend 'cuda_graphs'; known: torch, compile, flag_gems"
    )
    option = TOPK + "variants: {fast: {backend: torch, largest: false}}\n"
    assert error_of(tmp_path, option).startswith(
        "13: variants.fast.largest: an op bench's variants set only backend"
    )


def test_check_reference_and_kernel_fields(tmp_path: Path) -> None:
    bad_ref = TOPK + "check: {ref: torch.topkk}\n"
    assert error_of(tmp_path, bad_ref) == (
        "13: check.ref: 'torch' has no attribute 'topkk'; did you mean torch.topk?")
    sort = TOPK + "check: {ref: torch.sort}\n"
    assert error_of(tmp_path, sort) == (
        "13: check.ref: the reference gets the op's keywords, but takes no 'k'; it takes "
        "descending, dim, input, out, stable"
    )
    softmax = TOPK.replace("op: torch.topk", "op: torch.softmax").replace("k: k, ", "")
    assert error_of(tmp_path, softmax + "check: {ref: torch.topk}\n") == (
        "13: check.ref: the reference gets the op's keywords, but needs 'k', which neither "
        "`inputs` nor `args` gives"
    )
    both = TOPK + "check: {ref: torch.topk, exact: true, tolerance: 0.1}\n"
    assert "give `exact: true` or a `tolerance`, not both" in error_of(tmp_path, both)
    with_kernel = TOPK.replace("op: torch.topk", "kernel: sleep\ndescription: d")
    assert "`inputs`, `args` and `check` are for `op` benches" in error_of(tmp_path, with_kernel)


def test_the_ops_moe_benches_validate() -> None:
    for name in ("topk", "masked-select", "router"):
        bench = load_bench(REPO / "benches" / f"ops-moe-{name}.yaml")
        assert set(bench.variants) == {"torch", "flag_gems"}


def test_without_torch_validate_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "topk.yaml"
    path.write_text(TOPK)
    code = (
        "import sys; sys.modules['torch'] = None; from kernbench.cli import main; "
        f"sys.argv = ['kernbench', 'validate', {str(path)!r}]; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == EXIT_USAGE
    assert done.stderr.strip().splitlines() == [
        f"{path}:2: op: needs torch, not installed here "
        "(pip install 'kernbench[torch]')"
    ]


def test_without_torch_validating_every_bench_skips_the_op_benches_that_need_it() -> None:
    # A core install (no torch) validates what it can: the shipped op benches are not wrong.
    code = (
        "import sys; sys.modules['torch'] = None; from kernbench.cli import main; "
        "sys.argv = ['kernbench', 'validate']; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipped ")]
    assert "skipped benches/ops-moe-topk.yaml:5: op: needs torch, not installed here " \
        "(pip install 'kernbench[torch]')" in skipped
    assert "ok benches/milestone-1h-gemm.yaml" in done.stdout


def test_without_torch_list_shows_the_benches_that_need_it_as_not_usable_here_not_invalid(
) -> None:
    code = (
        "import sys; sys.modules['torch'] = None; from kernbench.cli import main; "
        "sys.argv = ['kernbench', 'list']; main()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr
    rows = dict(line.split(None, 1) for line in done.stdout.splitlines())
    why = ("(not usable here: needs torch, not installed here "
           "(pip install 'kernbench[torch]'))")
    assert rows["ops-moe-topk"] == (
        f"torch.topk over each token's expert scores, eager and under FlagGems {why}")
    # Kernel benches, told from their fields alone: a built-in that needs torch for every
    # cell (collective), a bench that requires CUDA (reached through torch).
    assert rows["milestone-1h-ccl"].endswith(why)
    assert rows["ab-tf32"].endswith(why)
    assert not rows["milestone-1h-gemm"].endswith(")")  # its numpy variants run on a CPU


def test_list_imports_no_op_module_so_not_torch() -> None:
    # `list` prints names and descriptions: importing the op benches' torch took seconds.
    code = ("import sys; from kernbench.cli import main; sys.argv = ['kernbench', 'list']\n"
            "try:\n    main()\nfinally:\n    print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO)
    assert "ops-moe-topk" in done.stdout and done.stdout.split()[-1] == "False", done.stderr


def test_shapes_and_args_use_expressions(tmp_path: Path) -> None:
    text = textwrap.dedent("""\
        name: softmax
        op: torch.softmax
        axes: {n: [8]}
        inputs:
          input: {shape: [n * 2, "max(n, 4)"], dtype: fp32}
        args: {dim: n - 9}
        """)
    path = tmp_path / "softmax.yaml"
    path.write_text(text)
    assert load_bench(path).args == {"dim": "n - 9"}



@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ("[vals]", "13: check.outputs.0: torch.topk returns (values, indices); it has no "
         "output 'vals'"),
        ("[values, 2]", "13: check.outputs.1: torch.topk returns (values, indices); it has no "
         "output 2"),
    ],
)
def test_check_outputs_name_what_the_op_returns(
    tmp_path: Path, outputs: str, message: str
) -> None:
    assert error_of(tmp_path, TOPK + f"check: {{ref: torch.topk, outputs: {outputs}}}\n") == (
        message
    )


def test_check_outputs_of_a_one_tensor_op(tmp_path: Path) -> None:
    select = TOPK.replace("torch.topk", "torch.masked_select").replace(
        "args: {k: k, dim: -1}", "  mask: {shape: [rows, cols], init: bernoulli(0.5)}"
    )
    check = "check: {ref: torch.masked_select, outputs: [values]}\n"
    assert error_of(tmp_path, select + check) == (
        "13: check.outputs.0: torch.masked_select returns one tensor; it has no output 'values'"
    )


@pytest.mark.parametrize(
    ("outputs", "error"),
    [("[0, 1]", None), ("[weights]", "'weights'"), ("[2]", "2")],
)
def test_check_outputs_of_an_op_annotated_with_a_tuple(
    tmp_path: Path, outputs: str, error: str | None
) -> None:
    router = (REPO / "benches" / "ops-moe-router.yaml").read_text()
    text = router.replace("outputs: [0]}", f"outputs: {outputs}}}")
    if error is None:
        (tmp_path / "router.yaml").write_text(text)
        load_bench(tmp_path / "router.yaml")
    else:
        assert error_of(tmp_path, text).endswith(
            f"check.outputs.0: kernbench.kernels.router.router_step returns a tuple of 2; it "
            f"has no output {error}"
        )


def test_outputs_that_cannot_be_read_without_a_call_are_left_to_the_cell() -> None:
    import torch

    def unannotated(x):  # type: ignore[no-untyped-def]
        return x, x

    assert known_outputs(unannotated) is None
    assert known_outputs(torch.unique) is None  # a tensor or a tuple, by its arguments
    assert known_outputs(torch.max) == Outputs(2, ("values", "indices"))


def test_a_signature_torch_wraps_over_two_lines_is_read_whole(tmp_path: Path) -> None:
    # scaled_dot_product_attention's docstring puts is_causal on the signature's second
    # line: the first alone said "takes no 'is_causal'" and hid its one-tensor result.
    import torch.nn.functional as F

    text = textwrap.dedent("""\
        name: sdpa
        op: torch.nn.functional.scaled_dot_product_attention
        axes: {seq: [16], causal: [false, true]}
        dtypes: [fp32]
        inputs:
          query: {shape: [1, 2, seq, 8]}
          key: {shape: [1, 2, seq, 8]}
          value: {shape: [1, 2, seq, 8]}
        args: {is_causal: causal, scale: 0.5}
        """)
    (tmp_path / "sdpa.yaml").write_text(text)
    assert load_bench(tmp_path / "sdpa.yaml").args == {"is_causal": "causal", "scale": 0.5}
    assert known_outputs(F.scaled_dot_product_attention) == Outputs(1, single=True)
