"""ncuflow.run: a study run from Python through Snakemake's API (replaying captures)."""

from pathlib import Path

import pytest
import yaml

import ncuflow
from conftest import ROOT
from ncuflow.errors import NcuflowError


def test_a_study_runs_from_python_and_returns_its_table(tmp_path: Path) -> None:
    """A study file of its own (the transpose study at one size: its whole DAG, figures
    and summary too), run from scratch, then again with nothing to do."""
    config = yaml.safe_load((ROOT / "experiments" / "transpose.yaml").read_text())
    config["kernels_dir"] = str(ROOT / "kernels")
    config["experiments"]["transpose"]["sizes"]["M"] = [4096]
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(config))
    table = ncuflow.run(study, cores=2, mode="replay", workdir=tmp_path)
    assert set(table["experiment"]) == {"transpose"} and set(table["M"]) == {4096}
    assert len(table) == 6 and set(table["status"]) == {"ok"}
    assert (tmp_path / "results" / "transpose" / "summary.md").is_file()
    assert (tmp_path / "results" / "transpose" / "roofline.png").is_file()
    # the same call again: nothing to do, the same table
    again = ncuflow.run(study, cores=2, mode="replay", workdir=tmp_path)
    assert again.equals(table)


def test_a_config_given_as_a_mapping_runs_only_its_experiments(tmp_path: Path) -> None:
    config = {"capture": "h100-sxm-transpose",
              "experiments": {"t": {"family": "transpose", "sizes": {"M": [1024], "N": "M"},
                                    "variants": {"naive": None}}}}  # fmt: skip
    (tmp_path / "results" / "old").mkdir(parents=True)  # another study's folder: not returned
    table = ncuflow.run(config, cores=2, mode="replay", workdir=tmp_path,
                        targets=["results/t/table.parquet"])  # fmt: skip
    assert table[["experiment", "variant", "status"]].values.tolist() == [["t", "naive", "ok"]]


def test_a_bad_config_stops_the_call_with_one_error(tmp_path: Path) -> None:
    with pytest.raises(NcuflowError, match="the study stopped"):
        ncuflow.run({"experiments": {"t": {"family": "no_such_family"}}}, mode="replay",
                    workdir=tmp_path)  # fmt: skip
    with pytest.raises(NcuflowError, match="no such config file"):
        ncuflow.run(tmp_path / "missing.yaml", workdir=tmp_path)


def test_mode_check_returns_no_table_and_raises_where_a_variant_is_wrong(tmp_path: Path) -> None:
    study = ROOT / "experiments" / "transpose.yaml"
    assert ncuflow.run(study, mode="check", workdir=tmp_path).empty
    assert not (tmp_path / "results").exists()
