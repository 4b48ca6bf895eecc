import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, edit_file
from ncuflow.measure.problem import Problem
from ncuflow.spec import SpecError, load_family, storage_dtype


@pytest.fixture
def family_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "kernels" / "matmul", tmp_path / "matmul")
    shutil.copytree(ROOT / "kernels" / "common", tmp_path / "common")  # what the tiles include
    return tmp_path


def test_a_family_copied_without_the_headers_it_includes_is_refused_with_the_line(
    tmp_path: Path,
) -> None:
    """The matmul folder alone as kernels_dir: its tiles include ../common/, which is not
    there; refused while planning, naming the file, the line and where the headers are."""
    shutil.copytree(ROOT / "kernels" / "matmul", tmp_path / "matmul")
    with pytest.raises(SpecError) as error:
        load_family(tmp_path, "matmul")
    text = str(error.value)
    assert re.match(r'\S+/matmul/\w+\.cuh?:\d+: #include "\.\./common/\w+\.cuh" names no file',
                    text), text  # fmt: skip
    assert "the bundled families' shared headers are kernels/common/" in text


def test_matmul_family_declares_its_variants() -> None:
    family = load_family(ROOT / "kernels", "matmul")
    assert family.dims == ("M", "N", "K")
    assert {"naive", "smem_tiled", "cublas_fp32"} <= set(family.variants)
    naive = family.variants["naive"]
    assert naive.is_cuda and naive.kernels == ("matmul_naive",)
    assert naive.params == {"BLOCK_X": 16, "BLOCK_Y": 16}
    assert family.variants["cublas_fp32"].baseline
    assert not family.variants["cublas_fp32"].is_cuda
    assert family.flops({"M": 2, "N": 3, "K": 4}) == 48


def test_library_baselines_say_where_and_in_what_precision_they_run() -> None:
    variants = load_family(ROOT / "kernels", "matmul").variants
    tf32, fp16, host = variants["cublas_tf32"], variants["cublas_fp16"], variants["cpu_blas"]
    assert (tf32.dtype, storage_dtype(tf32.dtype), tf32.profiled) == ("tf32", "float32", True)
    assert (fp16.dtype, fp16.out_dtype) == ("float16", "float16")
    assert host.runs_on == "cpu" and not host.profiled and host.baseline


def test_host_baseline_writes_the_product_into_its_output() -> None:
    family = load_family(ROOT / "kernels", "matmul")
    rng = np.random.default_rng(1)
    a, b = rng.random((4, 3), dtype=np.float32), rng.random((3, 5), dtype=np.float32)
    c = np.full((4, 5), np.nan, dtype=np.float32)
    family.function("host_matmul")(a, b, c, 4, 5, 3)
    np.testing.assert_allclose(c, a @ b, rtol=1e-6)


def test_reference_is_the_matrix_product() -> None:
    family = load_family(ROOT / "kernels", "matmul")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(family.function("reference")(A=a, B=b)["C"], a @ b)


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("smem_tiled.cu", "#define TILE 16", "#define TILE 8", "differs from the declared default"),
        (
            "naive.cu",
            "idea: one thread per C element;",
            "idea: one thread per C element: ",
            r"(?s)naive\.cu is not valid YAML: mapping values are not allowed here.*line 13, "
            r"column 31:.*a value that holds ': ' \(an idea:, say\) must be quoted",
        ),
        (
            "smem_tiled.cu",
            "grid: ceil_div(N, TILE), ceil_div(M, TILE)",
            "grid: [ceil_div(N, TILE), ceil_div(M, TILE)]",
            r"cannot parse expression 'ceil_div\(N'.*it looks cut at a comma: YAML splits "
            r"a \[\.\.\.\] list at every comma",
        ),
        ("smem_tiled.cu", "#ifndef TILE\n", "", "needs '#ifndef TILE'"),
        ("smem_tiled.cu", "TILE >= 1", "TILEE >= 1", r"unknown name\(s\) TILEE"),
        ("smem_tiled.cu", "kernel: matmul_smem_tiled", "kernel: nope", "'nope' is not defined"),
        ("smem_tiled.cu", "block: TILE, TILE", "block: TILE, TILE, 1, 1", "1 to 3 expressions"),
        ("smem_tiled.cu", "static_smem:", "shared_bytes:", "unknown key"),
        ("naive.cu", "/*---", "/*", "no declaration"),
        ("family.yaml", "float32: 1.0e-5", "float64: 1.0e-5", "no tolerance for dtype float32"),
        ("cpu_blas.yaml", "runs_on: cpu", "runs_on: tpu", "runs_on: 'tpu' is not a valid choice"),
        ("naive.cu", "kernel: matmul_naive", "kernel: matmul_naive\nruns_on: cpu", "runs_on"),
        ("cublas_fp32.yaml", "library: cublas_matmul", "lib: x", "unknown key"),
    ],
)
def test_bad_declarations_are_named(
    family_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    edit_file(family_copy / "matmul" / file, old, new)
    with pytest.raises(SpecError, match=message):
        load_family(family_copy, "matmul")


def test_the_fingerprint_does_not_depend_on_how_kernels_dir_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    for name in ("matmul", "classifier"):  # the classifier includes a header of its own
        relative = load_family(Path("kernels"), name).fingerprint
        assert relative == load_family(ROOT / "kernels", name).fingerprint


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("regtile_2d.cu", "{A: 16, B: 16}", "{C: 16, B: 16}", "C is an output; only inputs"),
        ("regtile_2d.cu", "{A: 16, B: 16}", "{Q: 16, B: 16}", "Q is not a tensor of the family"),
        ("regtile_2d.cu", "{A: 16, B: 16}", "{A: 12, B: 16}", "expected a power of two up to 256"),
        ("regtile_2d.cu", "{A: 16, B: 16}", "{A: 512, B: 16}", "a power of two up to 256"),
        ("regtile_2d.cu", "{A: 16, B: 16}", "{A: 2, B: 16}", r"element size \(4 bytes\)"),
        ("regtile_2d.cu", "{A: 16, B: 16}", "[A, B]", r"row_alignment: \['A', 'B'\] is a list"),
        ("regtile_2d.cu", "    name: gemm\n", "    name: pad_B\n", "takes the name of the step"),
        ("regtile_2d.cu", "ld_A, ld_B]", "ld_A, ld_C]", "takes the aligned input B but not ld_B"),
        ("regtile_2d.cu", "    args: [A, B, C, M, N, K, ld_A, ld_B]\n", "",
         "every launch must be a kernel that lists its args"),
        ("cpu_blas.yaml", "runs_on: cpu", "runs_on: cpu\nrow_alignment: {A: 16}",
         "every launch must be a kernel that lists its args"),
        ("wgmma_fp16.cu", "ld: ld_A,", "ld: K,", "tensor map map_a over the aligned input A needs"),
    ],
)  # fmt: skip
def test_bad_row_alignments_are_named(
    family_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    edit_file(family_copy / "matmul" / file, old, new)
    with pytest.raises(SpecError, match=message):
        load_family(family_copy, "matmul")


@pytest.mark.parametrize(
    ("variant", "dtypes", "size", "lengths"),
    [
        ("regtile_2d", ("float32", "float32"), 2049, (2052, 2052)),
        ("regtile_2d", ("float32", "float32"), 2048, (2048, 2048)),
        ("wgmma_fp16", ("float16", "float32"), 2049, (2056, 2056)),
        ("wgmma_fp16", ("float16", "float32"), 7, (8, 8)),
    ],
)
def test_an_aligned_input_row_length_is_rounded_up_to_whole_alignments(
    variant: str, dtypes: tuple[str, str], size: int, lengths: tuple[int, int]
) -> None:
    family = load_family(ROOT / "kernels", "matmul")
    dims = {"M": 3, "N": size, "K": size}
    env = family.scope(family.variants[variant], dims, {}, dtypes)
    assert (env["ld_A"], env["ld_B"]) == lengths
    assert env["in_bytes"] == np.dtype(dtypes[0]).itemsize


def test_a_padded_copy_takes_the_input_place_and_is_refilled_by_its_step() -> None:
    family = load_family(ROOT / "kernels", "matmul")
    variant = family.variants["regtile_2d"]
    dims = {"M": 3, "N": 8, "K": 7}
    problem = Problem(family, variant, dims, {}, 5, ("float32", "float32"))
    env = family.scope(variant, dims, variant.params, ("float32", "float32"))
    steps = problem.pad_rows({name: env[f"ld_{name}"] for name in variant.row_alignment})
    assert [name for name, _ in steps] == ["pad_A"]  # B's rows of 8 floats are aligned
    padded, a = problem.arg("A"), problem.inputs["A"]
    assert padded.shape == (3, 8) and not padded.any()
    assert problem.arg("B") is problem.inputs["B"]
    a[...] = np.arange(21, dtype=np.float32).reshape(3, 7) + 1  # fresh values: copied each run
    steps[0][1]()
    np.testing.assert_array_equal(padded[:, :7], a)
    assert not padded[:, 7:].any()


def test_a_variant_like_another_takes_its_tunables_and_restrictions() -> None:
    """stream_k compiles warptile's code: its tunables come in warptile's order with its
    own defaults, and warptile's restrictions come before its own."""
    variants = load_family(ROOT / "kernels", "matmul").variants
    warptile, stream_k = variants["warptile"], variants["stream_k"]
    assert list(stream_k.params) == list(warptile.params)
    assert stream_k.params == {**warptile.params, "BN": 256, "WM": 64, "TM": 16, "MIN_BLOCKS": 1}
    inherited = len(warptile.restrictions)
    assert [r.text for r in stream_k.restrictions[:inherited]] == [
        r.text for r in warptile.restrictions
    ]
    assert "+ 56 <=" in stream_k.restrictions[inherited].text
    assert stream_k.like == ((ROOT / "kernels" / "matmul" / "warptile.cu").resolve(),)


def test_a_scratch_buffer_starts_zeroed() -> None:
    """stream_k's flags must read 0 before its first launch (it clears them itself)."""
    family = load_family(ROOT / "kernels", "matmul")
    variant = family.variants["stream_k"]
    dims = {"M": 300, "N": 517, "K": 129}
    problem = Problem(family, variant, dims, {}, 5, ("float32", "float32"))
    problem.prepare_scratch(family.scope(variant, dims, variant.params, ("float32", "float32")),
                            {n: variant.scratch[n] for n in ("partials", "flags")})  # fmt: skip
    flags, partials = problem.arg("flags"), problem.arg("partials")
    assert flags.shape == (3 * 3,) and flags.dtype == np.int32 and not flags.any()
    assert partials.shape == (3 * 3, 128 * 256) and not partials.any()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("like: warptile.cu", "like: nothing.cu", "like 'nothing.cu' must name another variant"),
        ("like: warptile.cu", "like: stream_k.cu", "must name another variant's .cu file"),
        ("like: warptile.cu", "like: family.yaml", "must name another variant's .cu file"),
        (
            "params:\n  BN: 256\n  WM: 64\n  TM: 16\n  MIN_BLOCKS: 1\n",
            "params: [BN]\n",
            "params: \\['BN'\\] is a list, not object",
        ),
        (
            "block: (BM // WM) * (BN // WN) * 32",
            "block: sm_counts",
            r"unknown name\(s\) sm_counts; known: BK, BM, BN, .*, sm_count, smem_per_sm",
        ),
        ('#include "warptile.cu"', "", "parameter BM needs '#ifndef BM'"),
    ],
)
def test_bad_likes_and_unknown_names_are_named(
    family_copy: Path, old: str, new: str, message: str
) -> None:
    edit_file(family_copy / "matmul" / "stream_k.cu", old, new)
    with pytest.raises(SpecError, match=message):
        load_family(family_copy, "matmul")


def test_a_variant_cannot_be_like_one_that_is_like_another(family_copy: Path) -> None:
    (family_copy / "matmul" / "again.cu").write_text(
        (family_copy / "matmul" / "stream_k.cu").read_text()
        .replace("like: warptile.cu", "like: stream_k.cu")
        .replace("matmul_stream_k", "matmul_again")
    )  # fmt: skip
    with pytest.raises(SpecError, match=r"is itself like another \(warptile\.cu\)"):
        load_family(family_copy, "matmul")


def _like_pair(kernels_dir: Path, inherited: list[str], own: list[str]) -> tuple[Path, Path]:
    """matmul/child.cu, like shared/base.cu (outside the family: never loaded as a variant
    itself), with these restrictions each; the two files' paths."""
    base, child = kernels_dir / "shared" / "base.cu", kernels_dir / "matmul" / "child.cu"
    base.parent.mkdir()
    for path, head, restrictions in (
        (base, "params: {TILE: 16}", inherited),
        (child, "like: ../shared/base.cu", own),
    ):
        listed = "".join(f"\n  - {json.dumps(r)}" for r in restrictions)
        path.write_text(
            f"/*---\n{head}\nkernel: {path.stem}_kernel\nblock: TILE\ngrid: ceil_div(N, TILE)\n"
            f"restrictions:{listed}\n---*/\n#ifndef TILE\n#define TILE 16\n#endif\n"
            f"__global__ void {path.stem}_kernel() {{}}\n"
        )
    return base.resolve(), child.resolve()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("TILE >= 1 and", "cannot parse expression"),
        ("TILE", "'TILE' is not a condition"),
        ("__import__('os')", "only these functions may be called"),
        ("TILEE >= 1", r"'TILEE >= 1' uses unknown name\(s\) TILEE"),
        ("ld_A >= TILE", r"unknown name\(s\) ld_A"),  # no row_alignment: no padded rows
    ],
)
def test_a_wrong_inherited_restriction_is_named_in_the_file_it_comes_from(
    family_copy: Path, bad: str, message: str
) -> None:
    """The error names the variant being loaded, then the restriction's place in the list
    of the file it is like, not its place in the merged list."""
    base, child = _like_pair(family_copy, ["TILE >= 1", bad], ["TILE <= 64"])
    where = rf"{re.escape(str(child))}: restrictions\[1\] of {re.escape(str(base))} "
    with pytest.raises(SpecError, match=rf"^{where}\(inherited through like\).* {message}"):
        load_family(family_copy, "matmul")


@pytest.mark.parametrize(
    ("bad", "message"),
    [("TILE <= 64 or", "cannot parse expression"), ("TILEE >= 1", r"unknown name\(s\) TILEE")],
)
def test_a_wrong_own_restriction_of_a_variant_like_another_is_named_in_its_own_list(
    family_copy: Path, bad: str, message: str
) -> None:
    _, child = _like_pair(family_copy, ["TILE >= 1", "TILE % 4 == 0"], [bad])
    with pytest.raises(
        SpecError, match=rf"^{re.escape(str(child))}: restrictions\[0\](?! of).* {message}"
    ):
        load_family(family_copy, "matmul")


def test_the_schemas_name_what_the_code_knows() -> None:
    """The dtypes and precisions a declaration may name are the code's own tables."""
    from ncuflow import schema
    from ncuflow.metrics import PRECISIONS
    from ncuflow.spec import DTYPE_BYTES

    family, variant = schema.load(schema.FAMILY), schema.load(schema.VARIANT)
    for declared in (family, variant):
        assert declared["$defs"]["dtype"]["enum"] == list(DTYPE_BYTES)
    assert variant["properties"]["compute"]["items"]["enum"] == list(PRECISIONS)


def test_a_family_out_dtype_is_every_variants_unless_one_declares_its_own(tmp_path: Path) -> None:
    """classifier with out_dtype: float16 in family.yaml: a variant that says nothing
    writes float16 (and, its input float32, keeps it whatever dtype a config chooses);
    wmma_batched keeps the float32 it declares."""
    shutil.copytree(ROOT / "kernels" / "classifier", tmp_path / "classifier")
    shutil.copytree(ROOT / "kernels" / "common", tmp_path / "common")
    family_yaml = tmp_path / "classifier" / "family.yaml"
    family_yaml.write_text(family_yaml.read_text().replace(
        "dtype: float32\n", "dtype: float32\nout_dtype: float16\n", 1))  # fmt: skip
    variants = load_family(tmp_path, "classifier").variants
    assert (variants["baseline"].dtype, variants["baseline"].out_dtype) == ("float32", "float16")
    assert variants["baseline"].dtypes() == ("float32", "float16")
    assert variants["wmma_batched"].out_dtype == "float32"
    assert load_family(ROOT / "kernels", "classifier").variants["baseline"].out_dtype == "float32"
