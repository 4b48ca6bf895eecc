"""``ncuflow capture`` on a machine without a GPU: a GPU run's results (here laid out from a
committed capture) saved as a capture, whole, with the command as the run was started."""

import json
import shutil
from pathlib import Path

from conftest import CAPTURE, ROOT
from ncuflow.capture.folder import run_command, save_capture
from ncuflow.vocab import CAPTURE_INFO, DEVICE, MEASURE, NCU_LONG, PLAN, RUN, TABLE


def test_a_run_is_saved_whole_with_the_cores_and_gpus_it_had(tmp_path: Path) -> None:
    source = ROOT / "resources" / "captures" / "h100-sxm-transpose"
    results = tmp_path / "results"
    variants = sorted(p.name for p in (source / "transpose").iterdir() if p.is_dir())
    for variant in variants:
        part = results / "transpose" / variant / "p0"
        part.mkdir(parents=True)
        for name in (PLAN, MEASURE, NCU_LONG):
            shutil.copy2(source / "transpose" / variant / name, part / name)
    shutil.copy2(source / "transpose" / TABLE, results / "transpose" / TABLE)
    shutil.copy2(source / DEVICE, results / DEVICE)
    run = {"cores": 1, "gpus": 2, "wall_s": 12.5, "stages": {}}
    (results / RUN).write_text(json.dumps(run))
    command = "snakemake --configfile experiments/transpose.yaml --config mode=gpu"
    jobs = [("transpose", variant, ["p0"]) for variant in variants]
    folder = save_capture(results, tmp_path, "again", jobs, command, {"clock_control": "none"})
    saved = json.loads((folder / CAPTURE_INFO).read_text())
    assert saved["command"] == ("snakemake --cores 1 --resources gpu=2 --configfile "
                                "experiments/transpose.yaml --config mode=gpu")  # fmt: skip
    device = json.loads((source / DEVICE).read_text())
    assert saved["run"] == run and saved["device"] == device["name"]
    for variant in variants:
        for name in (PLAN, MEASURE):
            assert (folder / "transpose" / variant / name).read_text() == (
                source / "transpose" / variant / name
            ).read_text()
    assert run_command("snakemake -n", {"cores": 16, "gpus": 1}) == "snakemake --cores 16 -n"
    assert run_command("snakemake -n", {}) == "snakemake -n"


def test_configurations_no_capture_holds_say_how_to_check_them_without_a_gpu() -> None:
    """A new family has no record in any capture: the line that says so (a dry run's too)
    names what can be done without a GPU."""
    from ncuflow.capture.records import unreplayable
    from ncuflow.study.config import load_study

    experiment = {"family": "gather", "sizes": {"n": 8, "m": 4}, "variants": {"gather": None}}
    kernels = ROOT / "tests" / "data" / "kernels"
    study = load_study({"kernels_dir": str(kernels), "experiments": {"g": experiment}})
    lacking = unreplayable(CAPTURE, (study.plan(*job) for job in study.jobs()))
    assert lacking.startswith(
        "capture h100-sxm has no timing record of configuration(s) BLOCK=256_n=8_m=4 "
        "(experiments.g.variants.gather; it holds no variant gather of family gather)."
    ), lacking
    assert lacking.endswith(
        "Without a GPU, check their kernels with --config mode=check (or ncuflow check <config "
        "file>), and dry-run them as a GPU machine would with -n --config mode=gpu"
    )
