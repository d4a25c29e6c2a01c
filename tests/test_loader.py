"""The loader's error messages, exactly: `PATH:LINE: field.path: message`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench.errors import EXIT_USAGE, SpecError
from kernbench.spec.loader import load_bench, load_hardware
from kernbench.spec.models import Bench, HardwareProfile
from kernbench.spec.yaml_document import read_document

VALID = """\
name: demo
description: a demo bench
kernel: gemm
axes:
  shape: [{M: 64, N: 64, K: 64}]
dtypes: [fp32]
variants:
  plain: {backend: numpy}
metrics:
  flops: 2*M*N*K
"""
BENCH_KEYS = ", ".join(Bench.model_fields)


def write(folder: Path, text: str, name: str = "bench.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert info.value.code == EXIT_USAGE
    return str(info.value)


def test_valid_bench_loads(tmp_path: Path) -> None:
    bench = load_bench(write(tmp_path, VALID))
    assert bench.name == "demo"
    assert bench.axes["shape"] == [{"M": 64, "N": 64, "K": 64}]
    assert bench.variants == {"plain": {"backend": "numpy"}}


def test_bad_yaml_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\ndescription: [unclosed\nkernel: gemm\n")
    assert error_of(path) == f"{path}:3: yaml: expected ',' or ']', but got ':'"


def test_tab_indentation_is_a_yaml_error(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\naxes:\n\tx: [1]\n")
    assert error_of(path).startswith(f"{path}:3: yaml: found character '\\t'")


def test_unknown_top_level_key_lists_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "colour: red\n")
    assert error_of(path) == f"{path}:11: colour: unknown key; known: {BENCH_KEYS}"


def test_unknown_nested_key_names_its_field_path(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "timer:\n  warmup_s: 0.1\n  budget: 1\n")
    known = (
        "warmup_s, budget_s, min_samples, max_samples, rel_ci, l2, kind, cell_timeout_s, "
        "min_time_s, turns, duty, settle_s, settle_min_s, settle_tol, settle_clock, steady_tol"
    )
    assert error_of(path) == (
        f"{path}:13: timer.budget: unknown key; did you mean 'budget_s'? known: {known}")


def test_wrong_type_shows_the_value(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "rounds: three\n")
    assert error_of(path) == (
        f"{path}:11: rounds: Input should be a valid integer (got 'three')"
    )


def test_wrong_type_in_a_variant_option(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "ab: {switch: X, aa: maybe}\n")
    assert error_of(path) == (
        f"{path}:11: ab.aa: Input should be a valid boolean (got 'maybe')"
    )


def test_literal_choices_are_listed(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("dtypes: [fp32]", "dtypes: [fp33]"))
    assert error_of(path) == (
        f"{path}:6: dtypes.0: Input should be 'fp64', 'fp32', 'tf32', 'bf16', 'fp16', 'fp8', "
        "'int8', 'int32' or 'int64' (got 'fp33')"
    )


def test_empty_axis(tmp_path: Path) -> None:
    text = VALID.replace("  shape: [{M: 64, N: 64, K: 64}]", "  shape: []")
    path = write(tmp_path, text)
    assert error_of(path) == (
        f"{path}:5: axes.shape: List should have at least 1 item after validation, not 0"
    )


def test_missing_field_points_at_the_parent_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "# a comment first\n" + VALID.replace("description: a demo bench\n", ""))
    assert error_of(path) == f"{path}:2: description: Field required"


def test_missing_nested_field_points_at_its_parent_key(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "ab:\n  rounds: 6\n")
    assert error_of(path) == f"{path}:11: ab.switch: Field required"


def test_more_errors_are_counted_on_the_same_line(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "rounds: 0\nmodel: guess\n")
    assert error_of(path) == (
        f"{path}:11: rounds: Input should be greater than or equal to 1 (got 0) (and 1 more)"
    )


def test_union_member_errors_merge_into_one(tmp_path: Path) -> None:
    text = VALID.replace("  shape: [{M: 64, N: 64, K: 64}]", "  shape:\n    - [1, [2]]")
    path = write(tmp_path, text)
    assert error_of(path) == (
        f"{path}:6: axes.shape.0: Input should be a valid integer or a valid number or a valid "
        "string or a valid boolean or a valid dictionary"
    )


def test_a_model_validators_error_is_at_the_field_it_names(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "zip: [[shape, nope]]\n")
    line = len(VALID.splitlines()) + 1
    assert error_of(path) == f"{path}:{line}: zip.0.1: zip names 'nope', which is not an axis"


def test_duplicate_variant_names(tmp_path: Path) -> None:
    text = VALID.replace("  plain: {backend: numpy}\n", "  plain: {backend: numpy}\n  plain: {}\n")
    path = write(tmp_path, text)
    assert error_of(path) == f"{path}:9: variants.plain: duplicate key (first on line 8)"


def test_duplicate_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "name: other\n")
    assert error_of(path) == f"{path}:11: name: duplicate key (first on line 1)"


def test_unknown_builtin_kernel(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: gemmm"))
    assert error_of(path) == (
        f"{path}:3: kernel: unknown kernel 'gemmm'; built-in: collective, gemm, sleep "
        "(or give module:factory)"
    )


def test_kernel_ref_pattern(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: 'a b'"))
    assert error_of(path) == (
        f"{path}:3: kernel: expected a built-in kernel (collective, gemm, sleep) or "
        "module:factory, the module as an import names it (no .py, no path) (got 'a b')"
    )


def test_factory_module_not_found(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: nomod_kb_test:make"))
    assert error_of(path) == (
        f"{path}:3: kernel: cannot import 'nomod_kb_test': no nomod_kb_test.py beside the "
        "bench file, nor a module of that name on sys.path"
    )


def test_a_factory_module_whose_own_import_fails_names_its_line(tmp_path: Path) -> None:
    # The module was found: what it imports is missing, at a line the message names.
    (tmp_path / "needs_kb.py").write_text("import numpy\nimport nodep_kb_test\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: needs_kb:make"))
    assert error_of(path) == (
        f"{path}:3: kernel: cannot import 'needs_kb': ModuleNotFoundError: "
        "No module named 'nodep_kb_test' (needs_kb.py:2, in <module>)"
    )


def test_factory_module_that_raises(tmp_path: Path) -> None:
    (tmp_path / "broken_kb.py").write_text("raise RuntimeError('no GPU here\\nsecond line')\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: broken_kb:make"))
    assert error_of(path) == (
        f"{path}:3: kernel: cannot import 'broken_kb': RuntimeError: no GPU here second line "
        "(broken_kb.py:1, in <module>)"
    )


def test_a_factory_module_that_does_not_parse_names_its_line_once(tmp_path: Path) -> None:
    # It named kernbench's _import_file after Python's "(syntax_kb.py, line 2)".
    (tmp_path / "syntax_kb.py").write_text("import sys\ndef make(n)\n    return n\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: syntax_kb:make"))
    assert error_of(path) == (
        f"{path}:3: kernel: cannot import 'syntax_kb': SyntaxError: expected ':' "
        "(syntax_kb.py:2)")


def test_factory_module_that_exits(tmp_path: Path) -> None:
    (tmp_path / "exits_kb.py").write_text("import sys\nsys.exit(3)\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: exits_kb:make"))
    assert error_of(path) == (
        f"{path}:3: kernel: cannot import 'exits_kb': SystemExit: 3 (exits_kb.py:2, in <module>)")


def test_a_factory_name_close_to_one_the_module_has_is_offered(tmp_path: Path) -> None:
    (tmp_path / "near_kb.py").write_text("def make(n):\n    return n\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: near_kb:mak"))
    assert error_of(path) == (
        f"{path}:3: kernel: module 'near_kb' has no factory 'mak'; did you mean near_kb:make?")


def test_factory_missing_from_module(tmp_path: Path) -> None:
    (tmp_path / "empty_kb.py").write_text("x = 1\n")
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: empty_kb:make"))
    assert error_of(path) == f"{path}:3: kernel: module 'empty_kb' has no factory 'make'"
    path = write(tmp_path, VALID.replace("kernel: gemm", "kernel: empty_kb:x"))
    assert error_of(path) == f"{path}:3: kernel: empty_kb:x is not callable"


def test_metric_with_unknown_name(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("2*M*N*K", "2*M*N*Q"))
    assert error_of(path) == (
        f"{path}:10: metrics.flops: unknown name 'Q'; known: K, M, N, backend, dtype, itemsize"
    )


def test_metric_that_is_not_arithmetic(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("2*M*N*K", "M.real * 2"))
    assert error_of(path) == f"{path}:10: metrics.flops: Attribute is not allowed (only arithmetic)"
    path = write(tmp_path, VALID.replace("2*M*N*K", "__import__('os').system('true')"))
    assert error_of(path) == f"{path}:10: metrics.flops: Call is not allowed (only arithmetic)"


def test_exclusion_with_unknown_parameter(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "exclude:\n  - {dtype: fp32}\n  - {dtyp: fp32}\n")
    assert error_of(path) == (
        f"{path}:13: exclude.1.dtyp: unknown key 'dtyp'; known: K, M, N, backend, "
        "device, dtype, shape, variant"
    )


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("{dtype: fp46}", "exclude.0.dtype: 'fp46' is not a value dtype takes here ('fp32')"),
        ("{M: [64, 128]}", "exclude.0.M: 128 is not a value M takes here (64)"),
        ("{variant: plian}", "exclude.0.variant: 'plian' is not a value variant takes here "
         "('plain')"),
        ("{device: gpu}", "exclude.0.device: 'gpu' is not a value device takes here ('cpu', "
         "'cuda')"),
        ("{backend: torch}", "exclude.0.backend: 'torch' is not a value backend takes here "
         "('numpy')"),
        # a mapping axis by its label, as `--only shape=64x64x64` names it
        ("{shape: 64x64x46}", "exclude.0.shape: '64x64x46' is not a value shape takes here "
         "('64x64x64')"),
    ],
)
def test_exclusion_of_a_value_the_bench_never_takes(
    tmp_path: Path, rule: str, message: str
) -> None:
    path = write(tmp_path, VALID + f"exclude:\n  - {rule}\n")
    assert error_of(path) == f"{path}:12: {message}"


def test_exclusions_of_values_the_bench_takes(tmp_path: Path) -> None:
    rules = ("{dtype: fp32, M: 64}\n  - {device: [cpu, cuda], variant: plain, K: [64]}\n"
             "  - {shape: 64x64x64, device: cuda}\n")
    path = write(tmp_path, VALID + "exclude:\n  - " + rules)
    assert len(load_bench(path).exclude) == 3


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "# list\n- name: demo\n")
    assert error_of(path) == f"{path}:2: expected a mapping of bench fields, not a list"
    path = write(tmp_path, "just text\n")
    assert error_of(path) == f"{path}:1: expected a mapping of bench fields, not a string"


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "# nothing\n")
    assert error_of(path) == f"{path}: empty file; expected a mapping of bench fields"


def test_missing_file(tmp_path: Path) -> None:
    assert error_of(tmp_path / "none.yaml") == f"{tmp_path / 'none.yaml'}: file not found"


def test_python_tags_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(tmp_path, f"name: !!python/object/apply:os.system ['touch {marker}']\n")
    assert error_of(path) == (
        f"{path}:1: yaml: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object/apply:os.system'"
    )
    assert not marker.exists()


def test_alias_bomb_is_fast_and_clean(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join(['*a' + str(i - 1)] * 10)}]" for i in range(1, 9)]
    path = write(tmp_path, VALID + "\n".join(lines) + "\n")
    assert error_of(path) == f"{path}:11: a0: unknown key; known: {BENCH_KEYS} (and 8 more)"


def test_alias_cycle_is_clean(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("  shape: [{M: 64, N: 64, K: 64}]", "  shape: &s [*s]"))
    assert error_of(path) == (
        f"{path}:5: axes.shape.0: Input should be a valid integer or a valid number or a valid "
        "string or a valid boolean or a valid dictionary"
    )


def test_deep_nesting_is_clean(tmp_path: Path) -> None:
    path = write(tmp_path, "name: " + "[" * 600 + "]" * 600 + "\n")
    assert error_of(path) == f"{path}: yaml: document nested too deeply"


def test_unreadable_scalars_are_yaml_errors(tmp_path: Path) -> None:
    path = write(tmp_path, VALID + "data: 2001-02-30\n")
    assert (
        error_of(path)
        == f"{path}:11: yaml: cannot read '2001-02-30': day is out of range for month"
    )
    path = write(tmp_path, "name: demo\nrounds: !!int x\n")
    assert error_of(path) == (
        f"{path}:2: yaml: cannot read 'x': invalid literal for int() with base 10: 'x'"
    )


def test_lines_are_recorded_per_key_and_item(tmp_path: Path) -> None:
    doc = read_document(write(tmp_path, VALID))
    assert doc.lines[("axes", "shape")] == 5
    assert doc.lines[("variants", "plain", "backend")] == 8
    assert doc.line(("axes", "shape", "0", "M")) == 5
    assert doc.line(("nothing", "here")) == 1


HARDWARE = """\
name: gpu
description: a gpu
kind: cuda
match: [GPU]
peak_tflops:
  bf16: {datasheet: 100}
memory_gbs: {datasheet: 1000}
"""


def test_hardware_profile_loads(tmp_path: Path) -> None:
    profile = load_hardware(write(tmp_path, HARDWARE, "gpu.yaml"))
    assert isinstance(profile, HardwareProfile)
    assert profile.peak("bf16") == 100


def test_hardware_ceiling_needs_a_value(tmp_path: Path) -> None:
    path = write(tmp_path, HARDWARE.replace("{datasheet: 100}", "{}"), "gpu.yaml")
    with pytest.raises(SpecError) as info:
        load_hardware(path)
    assert str(info.value) == f"{path}:6: peak_tflops.bf16: give a datasheet or a measured value"


def test_hardware_unknown_key(tmp_path: Path) -> None:
    path = write(tmp_path, HARDWARE + "l3_bytes: 1\n", "gpu.yaml")
    with pytest.raises(SpecError) as info:
        load_hardware(path)
    known = ", ".join(HardwareProfile.model_fields)
    assert str(info.value) == (
        f"{path}:8: l3_bytes: unknown key; did you mean 'l2_bytes'? known: {known}")


def test_committed_benches_and_profiles_load() -> None:
    root = Path(__file__).resolve().parent.parent
    for path in sorted((root / "benches").glob("*.yaml")):
        assert load_bench(path).name == path.stem
    for path in sorted((root / "configs" / "hardware").glob("*.yaml")):
        assert load_hardware(path).name == path.stem


FIELD_NAMES = list(Bench.model_fields) + ["M", "shape", "backend", "datasheet", "x", "<<"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["gemm", "fp32", "2*M", "a:b", "roofline", "__import__('os')"]),
)
keys = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=8), st.integers(-3, 3))
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=6)
    ),
    max_leaves=25,
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents)
def test_random_documents_fail_only_as_spec_errors(tmp_path: Path, document: object) -> None:
    path = tmp_path / "random.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        load_bench(path)
    except SpecError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith(str(path))


YAML_TOKENS = [
    *"ab:-[]{}|>'\"#\n ,?%@`~",
    *("  ", "name", "axes", "kernel", "&x ", "*x", "<<", "0x", "1e999", "2001-02-30", "12:30"),
    *("!!int ", "!!float ", "!!binary ", "!!timestamp ", "!!set ", "!!omap ", "!!python/name:os "),
]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(YAML_TOKENS), max_size=30))
def test_random_text_fails_only_as_spec_errors(tmp_path: Path, tokens: list[str]) -> None:
    path = tmp_path / "random.yaml"
    path.write_text("".join(tokens))
    try:
        load_bench(path)
    except SpecError as exc:
        assert "\n" not in str(exc)


def test_readme_example_is_a_valid_bench(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    example = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert load_bench(write(tmp_path, example)).name == "my-gemm"


def test_a_key_that_is_a_line_break_is_named_on_one_line(tmp_path: Path) -> None:
    # Found by the random documents above once unknown keys came first: {"\n": null}.
    path = tmp_path / "odd.yaml"
    path.write_text('"\\n": null\n')
    with pytest.raises(SpecError) as info:
        load_bench(path)
    assert "\n" not in str(info.value) and ": '\\n': unknown key" in str(info.value)


def test_a_single_value_where_a_list_belongs_says_how_to_write_it(tmp_path: Path) -> None:
    # `rows: 64` for an axis of one value; pydantic's "valid list" left the fix to guess.
    path = write(tmp_path, VALID.replace("dtypes: [fp32]", "dtypes: fp32"))
    assert error_of(path) == (
        f"{path}:6: dtypes: Input should be a valid list (got 'fp32'; one value is a list "
        "of one: ['fp32'])")
