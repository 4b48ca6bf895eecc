"""Family and variant values that cannot be: negative, NaN or infinite tolerances and
scalars, a scalar its dtype cannot hold, repeated names, counts that are not one number,
refused with the file and key as the family loads (so a dry run refuses them too); and a
count that goes wrong at one size blamed on the file that declares it."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, edit_file
from ncuflow.spec import SpecError, load_family


@pytest.fixture
def gather_copy(tmp_path: Path) -> Path:
    """The test tree's gather family, copied to be edited: the kernels folder."""
    shutil.copytree(ROOT / "tests" / "data" / "kernels" / "gather", tmp_path / "gather")
    return tmp_path


def _gather_study(kernels_dir: Path, sizes: dict | None = None) -> dict:
    return {"kernels_dir": str(kernels_dir), "experiments": {"g": {
        "family": "gather", "sizes": sizes or {"n": 1000, "m": 77},
        "variants": {"gather": None, "numpy_gather": None}}}}  # fmt: skip


def _edit_anew(path: Path, old: str, new: str) -> None:
    """edit_file, and the family read again (a process reads a family once)."""
    from ncuflow.spec.family import read_family

    edit_file(path, old, new)
    read_family.cache_clear()


# (the text in family.yaml, what replaces it, the key named, what the message says): values
# YAML reads as numbers (.nan, .inf) or that the schema's types let through, but that no
# family can mean
IMPOSSIBLE = [
    ("{max_abs: 1.0e-6}", "{max_abs: -1.0e-6}", "outputs.y.check.max_abs",
     "-1e-06 is not a tolerance; expected a finite number, 0 or more"),
    ("{max_abs: 1.0e-6}", "{max_abs: .nan}", "outputs.y.check.max_abs",
     "nan is not a tolerance; expected a finite number, 0 or more"),
    ("{max_abs: 1.0e-6}", "{rel_fro: {float32: .inf}}", "outputs.y.check.rel_fro.float32",
     "inf is not a tolerance"),
    ("{max_abs: 1.0e-6}", "{rel_fro: {float32: true}}", "outputs.y.check.rel_fro.float32",
     "expected a number, got True"),
    ("merit: bytes", "merit: bytes\ntolerance: -0.1", "tolerance", "-0.1 is not a tolerance"),
    ("value: 2.5", "value: .nan", "scalars.alpha",
     "nan is not a finite number, expected a float32 number"),
    ("value: 2.5", "value: -.inf", "scalars.alpha", "-inf is not a finite number"),
    ("{dtype: float32, value: 2.5}", "{dtype: float16, value: 70000.0}", "scalars.alpha",
     r"70000.0 does not fit float16 \(-65504.0 to 65504.0\)"),
    ("  alpha: {dtype", "  n: {dtype", "scalars.n", "n is a dimension; scalars take other names"),
    ("  alpha: {dtype", "  x: {dtype", "scalars.x", "x is a tensor; scalars take other names"),
    ("normal: [0.0, 1.0]", "normal: [.nan, 1.0]", "inputs.x.draw.normal",
     r"expected two finite numbers \[a, b\], got \[nan, 1.0\]"),
    ("normal: [0.0, 1.0]", "uniform: [0.0, .inf]", "inputs.x.draw.uniform",
     "expected two finite numbers"),
    ("idx: {shape: n, dtype: int32}", "idx: {shape: n, dtype: int8, draw: {integers: [0, 300]}}",
     "inputs.idx.draw.integers",
     r"\[0, 300\] draws values that int8 does not hold; expected values from -128 to 127"),
    ("dims: [n, m]", "dims: [n, m, n]", "dims", "has non-unique elements"),
    ("flops: n ", "flops: n * BLOCK ", "flops",
     r"^'n \* BLOCK' uses unknown name\(s\) BLOCK; known: n, m$"),
    ("flops: n ", "flops: n\nmin_bytes: n * in_bytes * q ", "min_bytes",
     r"unknown name\(s\) q; known: n, m, in_bytes, out_bytes"),
    ("flops: n ", "flops: n, m ", "flops",
     r"'n, m' is 2 expressions \(a comma makes a tuple\); expected one number"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "key", "message"), IMPOSSIBLE)
def test_impossible_family_values_are_refused_with_the_file_and_key(
    gather_copy: Path, old: str, new: str, key: str, message: str
) -> None:
    path = gather_copy / "gather" / "family.yaml"
    edit_file(path, old, new)
    with pytest.raises(SpecError) as error:
        load_family(gather_copy, "gather")
    text = str(error.value)
    assert "\n" not in text
    prefix = f"{path.resolve()}: {key}"
    assert text.startswith(f"{prefix}: ") or text.startswith(f"{prefix} "), text
    assert re.search(message.lstrip("^"), text[len(prefix) + 1 :].lstrip(": ")), text


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("params: {BLOCK: 256}", "params: {BLOCK: 256}\ncompute: [fp32, fp32]",
         r"compute: \['fp32', 'fp32'\] has non-unique elements"),
        ("grid: ceil_div(m, BLOCK)", "grid: ceil_div(m, BLOCK)\n    dynamic_smem: 4, BLOCK",
         r"launches\[0\].dynamic_smem: '4, BLOCK' is 2 expressions"),
    ],
)  # fmt: skip
def test_impossible_variant_values_are_refused(
    gather_copy: Path, old: str, new: str, message: str
) -> None:
    path = gather_copy / "gather" / "gather.cu"
    edit_file(path, old, new)
    with pytest.raises(SpecError, match=rf"^{re.escape(str(path.resolve()))}: {message}"):
        load_family(gather_copy, "gather")


def test_a_wrong_count_is_blamed_on_the_file_that_declares_it(gather_copy: Path) -> None:
    """Where the config only chose the sizes: the family's flops (or a variant's model),
    with its file and key first, then the values it read and the config's variant."""
    from ncuflow.errors import ConfigError
    from ncuflow.study.config import load_study

    family, variant = gather_copy / "gather" / "family.yaml", gather_copy / "gather" / "gather.cu"
    _edit_anew(family, "flops: n ", "flops: n // (m - 77) ")
    with pytest.raises(SpecError) as error:
        load_study(_gather_study(gather_copy))
    assert str(error.value) == (
        f"{family.resolve()}: flops: cannot evaluate 'n // (m - 77)': integer division or "
        "modulo by zero (at m=77, n=1000, in experiments.g.variants.gather)")  # fmt: skip
    assert load_study(_gather_study(gather_copy, {"n": 1000, "m": 78})).count() == (2, 2)
    _edit_anew(family, "flops: n // (m - 77) ", "flops: n - 2000 ")
    with pytest.raises(SpecError, match=re.escape(
            f"{family.resolve()}: flops: 'n - 2000' gives -1000; expected a count, 0 or more "
            "(at n=1000, in experiments.g.variants.gather)")):  # fmt: skip
        load_study(_gather_study(gather_copy))
    _edit_anew(family, "flops: n - 2000 ", "flops: n * q ")
    with pytest.raises(ConfigError) as named:  # not the variant's: the family's own file
        load_study(_gather_study(gather_copy))
    assert str(named.value).startswith(
        f"config error at experiments.g.family: {family.resolve()}: flops 'n * q' uses unknown "
        "name(s) q; known: n, m")  # fmt: skip
    _edit_anew(family, "flops: n * q ", "flops: n ")
    _edit_anew(variant, "model_dram_bytes: n * 8 + m * 8", "model_dram_bytes: m - BLOCK")
    with pytest.raises(SpecError, match=re.escape(
            f"{variant.resolve()}: model_dram_bytes: 'm - BLOCK' gives -179; expected a count, "
            "0 or more (at BLOCK=256, m=77, in experiments.g.variants.gather)")):  # fmt: skip
        load_study(_gather_study(gather_copy))


def test_a_dry_run_refuses_an_impossible_family_value_before_any_job(gather_copy: Path) -> None:
    """Whenever a family is loaded: snakemake -n too, not only ncuflow check."""
    edit_file(gather_copy / "gather" / "family.yaml", "{max_abs: 1.0e-6}", "{max_abs: .nan}")
    config = gather_copy / "study.yaml"
    config.write_text(json.dumps(_gather_study(gather_copy)))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
                           "--configfile", str(config), "--cores", "1", "-n"],
                          capture_output=True, text=True, cwd=gather_copy)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (f"{(gather_copy / 'gather' / 'family.yaml').resolve()}: outputs.y.check.max_abs: nan "
            "is not a tolerance; expected a finite number, 0 or more") in proc.stderr  # fmt: skip
    assert "Job stats" not in proc.stdout + proc.stderr
