"""The widened family contract, on the CPU: a family defined only in the test tree
(tests/data/kernels/gather, the guide's example) measured for real by its host variant,
and every new declaration (tensors with their own dtypes and draws, scalars, per-output
checks, sequences of launches, scratch buffers, required modules) with its errors."""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, edit_file
from ncuflow.analyze.collect import collect
from ncuflow.analyze.derive import config_metrics
from ncuflow.errors import ConfigError, NcuflowError
from ncuflow.measure.compare import POISON_BITS, compare, poisoned
from ncuflow.measure.problem import Problem, call_with, draw
from ncuflow.measure.stage import measure_plan
from ncuflow.spec import Check, SpecError, Tensor, load_family
from ncuflow.study.config import load_study
from ncuflow.study.expand import DeviceLimits, VariantGrid

EXAMPLE = ROOT / "tests" / "data" / "kernels"


def _study(kernels: Path = EXAMPLE, **experiment: object) -> dict:
    base = {"family": "gather", "sizes": {"n": [1000, 4097], "m": 77},
            "variants": {"numpy_gather": None, "gather": None}}  # fmt: skip
    base.update(experiment)
    return {"kernels_dir": str(kernels), "seed": 3,
            "timing": {"min_repeats": 5, "max_repeats": 40, "budget_s": 0.2},
            "experiments": {"g": base}}  # fmt: skip


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE / "gather", tmp_path / "gather")
    return tmp_path


def _measure(tmp_path: Path, config: dict, variant: str = "numpy_gather") -> tuple[Path, Path]:
    study = load_study(config)
    plan, out = tmp_path / f"{variant}.plan.json", tmp_path / f"{variant}.measure.json"
    plan.write_text(study.plan("g", variant).to_json())
    measure_plan(plan, out, lambda line: None)
    return plan, out


def test_the_example_family_declares_the_widened_contract() -> None:
    family = load_family(EXAMPLE, "gather")
    assert family.index_type == "int64" and family.draw_function == "draw"
    assert family.tensors["idx"].dtype == "int32" and family.tensors["x"].draw == ("normal", (0, 1))
    assert family.checks == {"y": Check("max_abs", 1e-6), "hits": Check("exact")}
    assert family.scalars["alpha"].value == 2.5 and family.scalars["alpha"].dtype == "float32"
    cuda = family.variants["gather"]
    assert [launch.name for launch in cuda.launches] == ["gather_zero_hits", "gather_scaled"]
    assert cuda.launches[0].args is not None and cuda.launches[1].args is None
    host = family.variants["numpy_gather"]
    assert host.runs_on == "cpu" and not host.profiled and len(host.launches) == 2


def test_the_example_family_is_measured_and_collected_on_the_cpu(tmp_path: Path) -> None:
    config = _study(scalars={"alpha": -1.5})
    plan, measure = _measure(tmp_path, config)
    records = json.loads(measure.read_text())
    assert list(records) == ["n=1000_m=77", "n=4097_m=77"]
    for record in records.values():
        assert record["status"] == "ok", record["error"]
        assert record["max_abs_error"] <= 1e-6 and record["repeats"] >= 5
        assert set(record["step_ms"]) == {"gather_values", "count_hits"}
    metrics = tmp_path / "metrics.parquet"
    config_metrics(pd.DataFrame(columns=["config_id", "kernel_id", "kernel_name", "metric",
                                         "unit", "value"])).to_parquet(metrics)  # fmt: skip
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"name": "cpu"}))
    table = collect("g", [(plan, measure, metrics)], device, tmp_path / "table.parquet")
    assert list(table.columns[:8]) == ["experiment", "family", "variant", "config_id", "dtype",
                                       "n", "m", "alpha"]  # fmt: skip
    assert (table["alpha"] == -1.5).all() and (table["status"] == "ok").all()
    assert (table["min_bytes"] == table["m"] * 4 + table["n"] * 4 * 2 + table["m"] * 4).all()
    share = 100 * table["step_count_hits_ms"] / table["time_ms"]
    assert np.allclose(table["histogram_share_pct"], share) and (share > 0).all()
    assert (
        table["bound_reason"] == "not profiled: runs on the host (timed with the host clock)"
    ).all()
    assert not table["profiled"].any()


def test_a_wrong_host_result_is_named_by_its_check(tmp_path: Path, example_copy: Path) -> None:
    module = example_copy / "gather" / "family.py"
    edit_file(module, "hits[...] = np.bincount(idx, minlength=m)",
          "hits[...] = np.bincount(idx, minlength=m) + (np.arange(m) == 3)")  # fmt: skip
    _, measure = _measure(tmp_path, _study(example_copy))
    for record in json.loads(measure.read_text()).values():
        assert record["status"] == "wrong_result"
        assert record["error"].startswith("1 of 77 elements of hits differ from the reference")


def test_a_check_function_gets_the_inputs_scalars_and_dimensions(
    tmp_path: Path, example_copy: Path
) -> None:
    """So that a tolerance may scale with the inputs (a reduction's with the sum of |x|)."""
    family = example_copy / "gather" / "family.yaml"
    family.write_text(family.read_text() + "check: within_scale\n")
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text() + (
        "\n\ndef within_scale(outputs: Any, inputs: Any, scalars: Any, dims: Any) -> tuple:\n"
        "    scale = float(np.abs(np.asarray(inputs['x'])).sum())\n"
        "    alpha, n = scalars['alpha'], dims['n']\n"
        "    return False, f'scale {scale:.6f} alpha {alpha} n {n}'\n"))  # fmt: skip
    _, measure = _measure(tmp_path, _study(example_copy))
    for config, record in json.loads(measure.read_text()).items():
        n = 1000 if "n=1000" in config else 4097
        assert record["status"] == "wrong_result"
        assert re.fullmatch(rf"scale \d+\.\d{{6}} alpha 2\.5 n {n}", record["error"]), record


def test_a_variant_whose_module_is_missing_is_skipped_never_faked(
    tmp_path: Path, example_copy: Path
) -> None:
    declaration = example_copy / "gather" / "numpy_gather.yaml"
    declaration.write_text(declaration.read_text() + "requires: [ncuflow_no_such_module]\n")
    _, measure = _measure(tmp_path, _study(example_copy))
    for record in json.loads(measure.read_text()).values():
        assert record["status"] == "skipped"
        assert (
            "requires ncuflow_no_such_module, which this machine does not have" in record["error"]
        )


def test_inputs_follow_their_declarations_and_the_seed() -> None:
    family = load_family(EXAMPLE, "gather")
    variant = family.variants["numpy_gather"]
    dims = {"n": 5000, "m": 13}
    one = Problem(family, variant, dims, {"alpha": 2.5}, 7, ("float32", "float32"))
    two = Problem(family, variant, dims, {"alpha": 2.5}, 7, ("float32", "float32"))
    assert one.inputs["idx"].dtype == np.int32 and one.inputs["x"].dtype == np.float32
    assert one.inputs["idx"].min() >= 0 and one.inputs["idx"].max() < 13
    np.testing.assert_array_equal(one.inputs["x"], two.inputs["x"])
    assert abs(float(one.inputs["x"].std()) - 1.0) < 0.5  # normal: [mean 0, std 1]
    assert one.arg("n") == 5000 and isinstance(one.arg("n"), np.int64)
    assert isinstance(one.arg("alpha"), np.float32)
    one.poison()
    assert poisoned(one.outputs["y"]).all() and np.isnan(one.outputs["y"]).all()
    assert (one.outputs["hits"] == np.iinfo(np.int32).min).all()
    for dtype in (np.float16, np.float64):  # every floating width has its poison
        array = np.zeros(3, dtype)
        array.view(f"uint{8 * array.itemsize}")[:] = POISON_BITS[array.itemsize]
        assert poisoned(array).all() and np.isnan(array).all()
        assert not poisoned(np.array([np.nan, np.inf], dtype)).any()  # computed NaN, Inf


@pytest.mark.parametrize(
    ("draw_spec", "dtype", "check"),
    [
        (None, "float32", lambda a: a.min() >= -1 and a.max() < 1 and a.any()),
        (("uniform", (2.0, 3.0)), "float16", lambda a: a.min() >= 2 and a.max() <= 3),
        (("integers", (-3.0, 4.0)), "int64", lambda a: set(np.unique(a)) <= set(range(-3, 4))),
        (None, "uint8", lambda a: a.max() < 100 and a.dtype == np.uint8),
    ],
)
def test_draws(draw_spec, dtype, check) -> None:
    tensor = Tensor("t", (), output=False, dtype=dtype, draw=draw_spec)
    assert check(draw(np.random.default_rng(0), tensor, (64, 33), dtype))


def test_an_input_that_draws_only_zeros_is_refused() -> None:
    tensor = Tensor("t", (), output=False, dtype="int32", draw=("integers", (0.0, 1.0)))
    with pytest.raises(NcuflowError, match="input t drew only zeros"):
        draw(np.random.default_rng(0), tensor, (8,), "int32")


@pytest.mark.parametrize(
    ("out", "check", "ok", "message"),
    [
        ([1.0, 2.0, 3.0], Check("rel_fro", 1e-6), True, ""),
        ([1.0, 2.0, 3.1], Check("rel_fro", 1e-3), False, "relative error 0.0267 of C"),
        ([1.0, 2.0, 3.1], Check("max_abs", 0.2), True, ""),
        ([1.0, 2.0, 3.1], Check("max_abs", 0.01), False, "largest absolute error 0.1 of"),
        ([1.0, "poison", 3.0], Check("rel_fro", 1.0), False, "1 of 3 elements of C never written"),
        ([1.0, np.nan, 3.0], Check("rel_fro", 1.0), False, "1 of 3 elements of C are NaN or Inf"),
        ([1.0, np.inf, 3.0], Check("rel_fro", 1.0), False, "1 of 3 elements of C are NaN or Inf"),
        ([1.0, 2.0, 3.0], Check("exact"), True, ""),
        ([1.0, 2.0, 3.0 + 1e-6], Check("exact"), False, "1 of 3 elements of C differ"),
    ],
)  # fmt: skip
def test_compare(out: list, check: Check, ok: bool, message: str) -> None:
    array = np.array([0.0 if v == "poison" else v for v in out], dtype=np.float32)
    array.view(np.uint32)[[v == "poison" for v in out]] = POISON_BITS[4]
    result = compare("C", array, np.array([1.0, 2.0, 3.0]), check, "float32")
    assert result.ok == ok
    assert result.message.startswith(message)


def test_a_reference_gets_what_it_names() -> None:
    def reference(A, alpha, M):
        return A * alpha + M

    assert call_with(reference, {"A": 1, "B": 2, "alpha": 3, "M": 4, "N": 5}) == 7
    with pytest.raises(NcuflowError, match="asks for alpha, which the family does not have"):
        call_with(reference, {"A": 1, "M": 4})


def test_launches_are_chosen_per_configuration_by_when(example_copy: Path) -> None:
    cu = example_copy / "gather" / "gather.cu"
    cu.write_text(
        cu.read_text().replace("    args: [hits, m]\n", "    args: [hits, m]\n    when: m > 100\n")
    )
    family = load_family(example_copy, "gather")
    rows = VariantGrid("e", family, family.variants["gather"], [{"n": 10, "m": 50},
                       {"n": 10, "m": 500}], {}, [], DeviceLimits(), "where").rows()  # fmt: skip
    assert [[g.name for g in r.launches] for r in rows] == [
        ["gather_scaled"], ["gather_zero_hits", "gather_scaled"]]  # fmt: skip
    wide = VariantGrid("e", family, family.variants["gather"], [{"n": 10, "m": 500}],
                       {"BLOCK": 2048}, [], DeviceLimits(), "where").rows()  # fmt: skip
    assert wide[0].status == "skipped"
    assert wide[0].error.startswith("gather_zero_hits: block 2048×1×1 = 2048 threads exceeds")


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("gather.cu", "launches:\n", "kernel: gather_scaled\nlaunches:\n", "either one launch"),
        ("gather.cu", "args: [hits, m]", "args: [hits, q]", "'q' is neither a tensor"),
        ("gather.cu", "- kernel: gather_scaled", "- kernel: gather_zero_hits", "share a name"),
        ("gather.cu", "- kernel: gather_scaled", "- library: gather_values", "'library' belongs"),
        ("gather.cu", "params: {BLOCK: 256}", "params: {BLOCK: 256}\nscratch: {x: m}", "shadows"),
        ("numpy_gather.yaml", "library: count_hits", "kernel: count_hits", "belong to CUDA"),
        ("numpy_gather.yaml", "runs_on: cpu", "runs_on: cpu\nprofiled: true", "never profiled"),
        ("numpy_gather.yaml", "runs_on: cpu", "runs_on: cpu\nrequires: [a-b]", "module name"),
        ("family.yaml", "{normal: [0.0, 1.0]}", "{normal: [0.0, -1.0]}", "needs std > 0"),
        ("family.yaml", "{normal: [0.0, 1.0]}", "{poisson: [1, 2]}", "unknown draw 'poisson'"),
        ("family.yaml", "check: exact", "check: {rel: 1}", "unknown check 'rel'"),
        ("family.yaml", "check: exact", "check: {max_abs: {float16: 1}}",
         "no tolerance for dtype float32"),
        ("family.yaml", "dtype: int32, check", "dtype: int33, check", "'int33' is not a valid"),
        ("family.yaml", "value: 2.5", "value: hello", "'hello' is a str, expected a float32"),
        ("family.yaml", "index_type: int64", "index_type: int16", "index_type: 'int16' is not"),
        ("family.yaml", "merit: bytes", "merit: bytes\norder: [nope]", "order names unknown"),
        ("family.yaml", "merit: bytes", "merit: bytes\nfigures: {roofline: {y: n, label: x}}",
         "an experiment draws roofline itself"),
        ("family.yaml", "merit: bytes", "merit: bytes\nfigures: {energy: {y: n, label: x}}",
         "an experiment draws energy itself"),
        ("family.yaml", "merit: bytes", "merit: bytes\nrestrictions: [BLOCK > 1]",
         "may name only the dimensions"),
        ("family.yaml", "  y: {shape: n, check: {max_abs: 1.0e-6}}", "  y: {shape: n}",
         "output y has no check"),
    ],
)  # fmt: skip
def test_bad_declarations_are_named(
    example_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    edit_file(example_copy / "gather" / file, old, new)
    with pytest.raises(SpecError, match=message):
        load_family(example_copy, "gather")


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"scalars": {"alpha": "x"}}, "experiments.g.scalars.alpha",
         "'x' is a str, not number or array"),
        ({"scalars": {"beta": 1.0}}, "experiments.g.scalars.beta",
         "unknown scalar 'beta' of family gather; valid: alpha"),
        ({"sizes": {"n": 2**31, "m": 3}}, "experiments.g.sizes", None),
        ({"variants": {"gather": {"dtype": "float16"}}}, "experiments.g.variants.gather.dtype",
         "variant gather does not accept dtype 'float16'; it accepts float32"),
    ],
)  # fmt: skip
def test_bad_experiments_are_named(change: dict, where: str, message: str | None) -> None:
    config = _study(**change)
    if message is None:  # int64 dimensions: 2**31 is fine for this family
        assert load_study(config).count()[0] == 2
        return
    with pytest.raises(ConfigError) as error:
        load_study(config)
    assert str(error.value) == f"config error at {where}: {message}"


def test_dimensions_beyond_the_index_type_are_refused() -> None:
    config = {"kernels_dir": str(ROOT / "kernels"), "experiments": {"c": {
        "family": "matmul", "sizes": {"M": 2**31, "N": 8, "K": 8},
        "variants": {"cublas_fp32": None}}}}  # fmt: skip
    with pytest.raises(ConfigError, match=r"sizes.M: 2147483648 does not fit the int32"):
        load_study(config)


def test_a_list_of_size_grids_is_their_union_in_order() -> None:
    config = _study(sizes=[{"n": [8, 16], "m": 4}, {"n": 8, "m": [4, 5]}])
    rows = load_study(config).experiments["g"].rows("numpy_gather")
    assert [r.dims for r in rows] == [{"n": 8, "m": 4}, {"n": 16, "m": 4}, {"n": 8, "m": 5}]


# (the file of the example family, what to replace in it and with what, what the message says)
BROKEN_FAMILY = [
    ("family.py", "def reference(", "def reference(:", "family.py:15: invalid syntax"),
    ("family.yaml", "  y: {shape: n,", "  y: {shape: q,",
     "family.yaml: outputs.y: its shape names q, which is not a dimension; dims: n, m"),
    ("family.py", "import numpy as np", "import numpy as np\nraise RuntimeError('no GPU here')",
     "family.py: importing it failed: RuntimeError: no GPU here"),
    ("family.yaml", "reference: reference", "reference: refrence",
     "family.py: has no function 'refrence' (the family's reference); its functions: count_hits,"),
    ("family.yaml", "draw: draw", "draw: drow", "has no function 'drow' (the family's draw"),
    ("family.py", "def reference(x: Any, idx: Any, alpha: float, m: int)",
     "def reference(x: Any, idx: Any, alpha: float, m: int, k: int)",
     "reference reference asks for k, which the harness does not pass; it passes alpha, idx, m,"),
    ("family.py", "def draw(dims: dict[str, int], rng: np.random.Generator)",
     "def draw(dims: dict[str, int], rng: np.random.Generator, seed: int)",
     "draw function draw asks for seed, which the harness does not pass; it passes dims, rng"),
    ("numpy_gather.yaml", "library: count_hits", "library: count_hit",
     "has no function 'count_hit' (a library launch of variant numpy_gather)"),
    ("family.py", "def count_hits(idx: Any, hits: Any, m: int)",
     "def count_hits(idx: Any, hits: Any)",
     "count_hits is called by variant numpy_gather with 3 arguments and its tunables (none): "
     "too many positional arguments"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "message"), BROKEN_FAMILY,
                         ids=[c[3][:40] for c in BROKEN_FAMILY])  # fmt: skip
def test_a_broken_family_is_refused_while_planning(
    example_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    """Not in a GPU job: the dry run names the file, the line or function, and what the
    harness passes."""
    path = example_copy / "gather" / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    with pytest.raises(ConfigError) as error:
        load_study(_study(example_copy))
    assert str(error.value).startswith("config error at experiments.g.family: "), error.value
    assert message in str(error.value)


def test_a_family_without_family_py_is_refused_while_planning(example_copy: Path) -> None:
    (example_copy / "gather" / "family.py").unlink()
    with pytest.raises(ConfigError, match=r"family\.py: no such file; a family's family\.py"):
        load_study(_study(example_copy))


def test_a_kernel_source_that_is_not_utf8_is_named_with_its_line(example_copy: Path) -> None:
    cu = example_copy / "gather" / "gather.cu"
    cu.write_bytes(cu.read_bytes().replace(b"// one index", "// caf\u00e9 index".encode("latin-1")))
    with pytest.raises(ConfigError, match=r"gather\.cu: line 3: byte 0xe9 is not UTF-8; save"):
        load_study(_study(example_copy))


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the kernels folder, holding a copy of the example's kernel."""
    folder = tmp_path_factory.mktemp("outside")
    shutil.copy2(EXAMPLE / "gather" / "gather.cu", folder / "gather.cu")
    (folder / "secret.cuh").write_text("// not the user's to read\n")
    return folder


def _refused_source(kernels: Path) -> str:
    with pytest.raises(SpecError) as error:
        load_family(kernels, "gather")
    return str(error.value)


def test_a_variant_like_a_file_outside_the_kernels_folder_is_refused(
    example_copy: Path, outside: Path
) -> None:
    own = example_copy / "gather" / "gather.cu"
    liked = os.path.relpath(outside / "gather.cu", own.parent)
    (own.parent / "mine.cu").write_text(own.read_text().replace(
        "/*---\n", f"/*---\nlike: {liked}\n", 1))  # fmt: skip
    assert "is outside the kernels folder" in _refused_source(example_copy)


def test_a_linked_variant_or_family_outside_the_kernels_folder_is_refused(
    example_copy: Path, outside: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    (example_copy / "gather" / "linked.cu").symlink_to(outside / "gather.cu")
    assert f"(a link to {outside / 'gather.cu'}) is outside" in _refused_source(example_copy)
    kernels = tmp_path_factory.mktemp("kernels")
    (kernels / "gather").symlink_to(EXAMPLE / "gather")  # a family folder that is a link
    with pytest.raises(SpecError, match="is outside the kernels folder"):
        load_family(kernels, "gather")


@pytest.mark.parametrize("include", ["through_inc", "absolute", "angled_up"])
def test_an_include_that_leaves_the_kernels_folder_is_refused_with_its_line(
    example_copy: Path, outside: Path, include: str
) -> None:
    cu = example_copy / "gather" / "gather.cu"
    line = {"through_inc": '#include "more.inc"',
            "absolute": f"#include <{outside / 'secret.cuh'}>",
            "angled_up": "#include <../../secret.cuh>"}[include]  # fmt: skip
    secret = os.path.relpath(outside / "secret.cuh", cu.parent)
    (cu.parent / "more.inc").write_text(f'// includes another\n#include "{secret}"\n')
    cu.write_text(cu.read_text().replace("#ifndef BLOCK", f"{line}\n#ifndef BLOCK", 1))
    text = _refused_source(example_copy)
    where = f"{cu.parent / 'more.inc'}:2" if include == "through_inc" else f"{cu}:21"
    assert text.startswith(f"{where}: "), text
    assert "outside the kernels folder" in text
