"""`ncuflow check`: a study's kernels checked on a machine without a GPU, one line per
variant (NVRTC compiles each tunable set where its Python bindings are installed), each
ok, not checked or WRONG, then a line counting them."""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.nvrtc import bindings
from ncuflow.vocab import CUBINS
from shared_builds import CHECKED, bundled_cubins

EXAMPLE = ROOT / "tests" / "data" / "kernels"
LINE = re.compile(r"ncuflow check: (\w+)/(\w+): (ok|not checked|WRONG): ")


def _study(tmp_path: Path, kernels: Path, variants: dict | None = None) -> Path:
    variants = variants or {"numpy_gather": None, "gather": {"params": {"BLOCK": [128, 256]}}}
    experiment = {"family": "gather", "sizes": {"n": [1000, 4097], "m": 77}, "variants": variants}
    config = tmp_path / "study.yaml"
    config.write_text(
        yaml.safe_dump({"kernels_dir": str(kernels), "experiments": {"g": experiment}})
    )
    return config


def _run(*args: str | Path, cache: Path | None = None) -> subprocess.CompletedProcess:
    """``ncuflow check`` in a folder of its own: the cubins it compiles go to that folder's
    cache, not to the repository's; ``cache``: that folder's cache is this one."""
    with tempfile.TemporaryDirectory() as folder:
        if cache is not None:
            (Path(folder) / CUBINS).parent.mkdir(parents=True)
            (Path(folder) / CUBINS).symlink_to(cache)
        return subprocess.run([sys.executable, "-m", "ncuflow", "check", *map(str, args)],
                              capture_output=True, text=True, cwd=folder)  # fmt: skip


def _check(tmp_path: Path, kernels: Path) -> subprocess.CompletedProcess:
    return _run(_study(tmp_path, kernels))


@pytest.fixture
def example_copy(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE / "gather", tmp_path / "kernels" / "gather")
    return tmp_path / "kernels"


def _lines(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """Each variant's line, by variant."""
    return {match[2]: line for line in proc.stdout.splitlines() if (match := LINE.match(line))}


GPU_GATHER = """idea: the host variant's two steps, as a library on the GPU
launches:
  - {library: gather_values, args: [x, idx, y, alpha]}
  - {library: count_hits, args: [idx, hits, m]}
"""


def test_a_good_family_passes_with_one_line_per_variant_and_the_counts(tmp_path: Path) -> None:
    proc = _check(tmp_path, EXAMPLE)
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc)
    assert set(lines) == {"numpy_gather", "gather"}
    assert lines["numpy_gather"].startswith(
        "ncuflow check: g/numpy_gather: ok: inputs drawn and the reference computed at n=1000, "
        "m=77; run on the host and checked at n=1000, m=77 (")  # fmt: skip
    if bindings():
        assert lines["gather"] == ("ncuflow check: g/gather: ok: 2 tunable set(s) compiled for "
                                   "sm_90; inputs drawn and the reference computed at n=1000, "
                                   "m=77"), lines  # fmt: skip
        assert (
            proc.stdout.splitlines()[-1]
            == "ncuflow check: 2 variant(s): 2 ok, 0 not checked, 0 wrong"
        )
    else:  # compiling is half the check of a CUDA variant: without it, not checked
        assert lines["gather"].startswith("ncuflow check: g/gather: not checked: not compiled: "
                                          "NVRTC's Python bindings are not installed")  # fmt: skip


def test_what_this_machine_cannot_check_is_not_checked_never_ok(
    tmp_path: Path, example_copy: Path
) -> None:
    """A library variant on the GPU (its calls run only there) and one that requires a
    module this machine lacks: "not checked", first on their lines, counted apart in the
    last line, and no failure (exit status 0)."""
    (example_copy / "gather" / "gpu_gather.yaml").write_text(GPU_GATHER)
    (example_copy / "gather" / "needs_module.yaml").write_text(
        GPU_GATHER + "requires: [ncuflow_no_such_module]\n"
    )
    variants = {"numpy_gather": None, "gpu_gather": None, "needs_module": None}
    proc = _run(_study(tmp_path, example_copy, variants))
    assert proc.returncode == 0, proc.stderr
    lines = _lines(proc)
    assert lines["numpy_gather"].startswith("ncuflow check: g/numpy_gather: ok: ")
    assert lines["gpu_gather"] == (
        "ncuflow check: g/gpu_gather: not checked: its library calls run only on a GPU; inputs "
        "drawn and the reference computed at n=1000, m=77")  # fmt: skip
    assert lines["needs_module"] == (
        "ncuflow check: g/needs_module: not checked: it requires ncuflow_no_such_module, which "
        "this machine lacks")  # fmt: skip
    assert proc.stdout.splitlines()[-1] == (
        "ncuflow check: 3 variant(s): 1 ok, 2 not checked, 0 wrong (not checked: this machine "
        "cannot run them, as each line says; a run on a GPU checks them)")  # fmt: skip
    assert "ok: not checked" not in proc.stdout


def test_a_host_variant_that_computes_wrong_is_named(tmp_path: Path, example_copy: Path) -> None:
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text().replace(
        "hits[...] = np.bincount(idx, minlength=m)",
        "hits[...] = np.bincount(idx, minlength=m) + (np.arange(m) == 3)"))  # fmt: skip
    proc = _check(tmp_path, example_copy)
    assert proc.returncode == 1
    assert (
        _lines(proc)["numpy_gather"].startswith(
            "ncuflow check: g/numpy_gather: WRONG: BLOCK=128_n=1000_m=77: wrong_result: 1 of 77 "
            "elements of hits differ from the reference"
        )
        or "wrong_result: 1 of 77" in proc.stdout
    )
    assert re.search(r"ncuflow check: 2 variant\(s\): [01] ok, [01] not checked, 1 wrong$",
                     proc.stdout.splitlines()[-1])  # fmt: skip
    assert "ncuflow: check: 1 variant(s) of" in proc.stderr
    assert "ncuflow: check: " not in proc.stdout  # said once, on stderr


@pytest.mark.skipif(bindings() is None, reason="NVRTC's Python bindings are not installed")
def test_what_nvrtc_refuses_is_named_before_any_gpu(tmp_path: Path, example_copy: Path) -> None:
    """nvcc takes -INFINITY from its host headers; NVRTC does not: found here, not on a GPU."""
    source = example_copy / "gather" / "gather.cu"
    text = source.read_text()
    at = text.index('extern "C" __global__ void gather_zero_hits')
    source.write_text(text[:at] + "__device__ float ncuflow_low = -INFINITY;\n" + text[at:])
    proc = _check(tmp_path, example_copy)
    assert proc.returncode == 1
    wrong = _lines(proc)["gather"]
    assert wrong.startswith("ncuflow check: g/gather: WRONG: BLOCK=128_n=1000_m=77 does not "
                            "compile for sm_90 with NVRTC:"), wrong  # fmt: skip
    assert 'identifier "INFINITY" is undefined' in proc.stdout


def test_the_study_is_read_as_snakemake_reads_it(tmp_path: Path, example_copy: Path) -> None:
    """--configfile as Snakemake users type it (the bare path still works), and --config
    overrides over it, read as the Snakefile reads them: here the kernels folder of a
    broken copy, and a section given as YAML whose number Snakemake leaves as text."""
    config = _study(tmp_path, EXAMPLE, {"numpy_gather": None})
    proc = _run("--configfile", config, "--config", "timing={min_repeats: 2}")
    assert proc.returncode == 0, proc.stderr
    assert set(_lines(proc)) == {"numpy_gather"}
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text().replace(
        "hits[...] = np.bincount(idx, minlength=m)",
        "hits[...] = np.bincount(idx, minlength=m) + 1"))  # fmt: skip
    proc = _run("--configfile", config, "--config", f"kernels_dir={example_copy}")
    assert proc.returncode == 1 and " WRONG: " in _lines(proc)["numpy_gather"]
    for args, message in [
        ((config, "--configfile", config), "the config file is given twice"),
        (("--configfile", tmp_path / "none.yaml"), f"{tmp_path / 'none.yaml'}: no such config"),
        (("--configfile", config, "--config", "seed"), "check: --config seed: Invalid config"),
        (("--configfile", config, "--config", "seed=-1"), "config error at seed: -1 is less"),
    ]:  # fmt: skip
        proc = _run(*args)
        assert proc.returncode == 1 and proc.stderr.startswith("ncuflow: "), proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(("study", "variants"), CHECKED.items())
def test_every_bundled_family_passes(study: str, variants: int) -> None:
    """The default study (matmul, classifier, conv) and the studies of the histogram,
    transpose, transfer and axpy families: no variant wrong; each CUDA or host variant
    ok, each library variant on the GPU (cuBLAS, cuDNN, Triton, CuPy) not checked. Their
    builds come from the session's shared cache (shared_builds), as a check again in one
    folder finds them in its own."""
    from ncuflow.files import read_config
    from ncuflow.study.config import load_study

    proc = _run(ROOT / study, cache=bundled_cubins() if bindings() else None)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    loaded = load_study(read_config(ROOT / study), ROOT / Path(study).parent)
    lines = [LINE.match(line) for line in proc.stdout.splitlines()[:-1]]
    assert len(lines) == variants and all(lines), proc.stdout
    for match in lines:
        assert match is not None
        variant = loaded.experiments[match[1]].family.variant(match[2])
        on_gpu_library = not variant.is_cuda and variant.runs_on == "gpu"
        assert match[3] == ("not checked" if on_gpu_library else "ok"), match.string
    checked = sum(match is not None and match[3] == "ok" for match in lines)
    assert proc.stdout.splitlines()[-1].startswith(
        f"ncuflow check: {variants} variant(s): {checked} ok, {variants - checked} not checked, "
        "0 wrong")  # fmt: skip


def test_mode_check_checks_the_study_and_runs_no_job(tmp_path: Path, example_copy: Path) -> None:
    """snakemake --config mode=check is ncuflow check: a line per variant and the counts,
    no job, no results; exit status 1 where a variant is wrong."""
    config = _study(tmp_path, example_copy, {"numpy_gather": None, "gather": None})
    command = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "1",
               "--configfile", str(config), "--config", "mode=check"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert set(_lines(proc)) == {"numpy_gather", "gather"}
    assert proc.stdout.splitlines()[-1].startswith("ncuflow check: 2 variant(s): ")
    assert not (tmp_path / "results").exists()
    module = example_copy / "gather" / "family.py"
    module.write_text(module.read_text().replace(
        "hits[...] = np.bincount(idx, minlength=m)",
        "hits[...] = np.bincount(idx, minlength=m) + 1"))  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 1 and "numpy_gather: WRONG: " in _lines(proc)["numpy_gather"]
    assert "ncuflow: check: 1 variant(s) are wrong (above)" in proc.stderr


def test_the_guides_dry_run_of_a_new_family_works_without_a_gpu(
    tmp_path: Path, example_copy: Path
) -> None:
    """The guide's commands on a family no capture holds, on a machine without a GPU: the
    dry run in mode gpu plans it; the plain dry run (auto: replay here) stops at what the
    capture lacks and says how to check it without a GPU."""
    config = _study(tmp_path, example_copy)
    dry_run = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--configfile",
               str(config), "--cores", "1", "-n"]  # fmt: skip
    proc = subprocess.run([*dry_run, "--config", "mode=gpu"], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "This was a dry-run" in proc.stdout + proc.stderr
    proc = subprocess.run([*dry_run, "--config", "mode=replay"], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "has no timing record" in x)
    assert line.endswith(
        "Without a GPU, check their kernels with --config mode=check (or ncuflow check <config "
        "file>), and dry-run them as a GPU machine would with -n --config mode=gpu"
    ), line


@pytest.mark.skipif(bindings() is None, reason="NVRTC's Python bindings are not installed")
def test_a_check_compiles_into_the_cache_a_run_in_its_folder_reads(
    tmp_path: Path, example_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each build compiled once, into the compile stage's cache of the folder the check
    runs in: a check again compiles nothing, and the compile stage of a run there only the
    harness's own kernels."""
    from ncuflow.check import variants
    from ncuflow.check.command import read_study
    from ncuflow.compile import stage
    from ncuflow.nvrtc import Compiled
    from ncuflow.vocab import CUBINS

    monkeypatch.chdir(tmp_path)
    study = read_study([_study(tmp_path, example_copy)])
    first = [c.line() for c in variants.check_study(study, workers=2)]
    assert sum(": ok: " in line for line in first) == 2, first
    assert len(list((tmp_path / CUBINS).glob("*.cubin"))) == 2  # gather at BLOCK 128 and 256
    compiled: list[str] = []

    def counted(source: str, name: str, options: object) -> Compiled:
        compiled.append(name)
        return Compiled(b"\0", "")

    monkeypatch.setattr(variants, "compile_cubin", counted)
    monkeypatch.setattr(stage, "compile_cubin", counted)
    again = list(variants.check_study(study, workers=1))
    assert [c.status for c in again] == ["ok", "ok"], again
    assert [c.line() for c in again if c.variant == "gather"] == [
        line for line in first if line.startswith("g/gather: ")]  # fmt: skip
    assert compiled == []
    jobs = [(Path(study.plan_file("g", v, tmp_path / "plans")), part)
            for v, part in study.batch_jobs("g")]  # fmt: skip
    lines: list[str] = []
    stage.compile_stage(jobs, tmp_path / "compiled.json", tmp_path / CUBINS, "sm_90", 1,
                        lines.append)  # fmt: skip
    assert sorted(compiled) == sorted(f"{name}.cu" for name in stage.HELPERS), lines


# ptxas's report as NVRTC printed it for a kernel of 96 accumulators under
# __launch_bounds__(1024, 2) (-Xptxas -v, sm_90, 2026-11-29), its spills left to fill in
PTXAS_REPORT = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gather' for 'sm_90'
ptxas info    : Function properties for gather
ptxas         .     448 bytes stack frame, {0} bytes spill stores, {0} bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 448 bytes cumulative stack size"""


def test_a_build_that_spills_registers_is_named_on_its_line(
    tmp_path: Path, example_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ptxas's report, kept beside each cubin, says which tunable sets spill: the variant
    stays ok (slower, not wrong) and its line names how many and the worst."""
    from ncuflow.check import variants
    from ncuflow.check.command import read_study
    from ncuflow.compile import stage
    from ncuflow.compile.ptxas import read_report
    from ncuflow.nvrtc import Compiled

    def spilling(source: str, name: str, options: tuple[str, ...]) -> Compiled:
        return Compiled(b"\0", PTXAS_REPORT.format(96 if "-DBLOCK=256" in options else 0))

    (used,) = read_report(PTXAS_REPORT.format(1072))
    assert (used.function, used.registers, used.spill_store_bytes) == ("gather", 32, 1072)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stage, "compile_cubin", spilling)
    study = read_study([_study(tmp_path, example_copy)])
    checked = {c.variant: c for c in variants.check_study(study, workers=1)}
    assert checked["gather"].status == "ok", checked
    said = checked["gather"].said
    assert ("2 tunable set(s) compiled for sm_90, 1 of them spilling registers (ptxas: up to "
            "96 bytes of spill stores, at ") in said, said  # fmt: skip
