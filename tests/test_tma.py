"""Tensor maps (ncuflow.spec.model, ncuflow.measure.tma) and the Hopper keys of a variant's
spec, without a GPU: what the TMA would refuse is named before any launch, and the bundled
wgmma rung declares maps the rules accept at every size the ladder tests."""

from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from ncuflow.measure.tma import problems
from ncuflow.spec import SpecError, load_family

GOOD = {"rows": 1024, "cols": 1024, "ld": 1024, "box_rows": 128, "box_cols": 64}


def test_a_usable_map_has_no_problems() -> None:
    assert problems(GOOD, 2, 0x7F0000000000) == []


@pytest.mark.parametrize(("change", "address", "expected"), [
    ({"box_rows": 512}, 0, "box_rows 512 is not within 1..256"),
    ({"box_cols": 0}, 0, "box_cols 0 is not within 1..256"),
    ({"box_cols": 128}, 0, "a box row of 128 elements is 256 bytes, more than the 128-byte"),
    ({"ld": 1025, "cols": 1025}, 0, "rows of 1025 elements are 2050 bytes apart"),
    ({"ld": 1000}, 0, "ld 1000 is less than the 1024 columns"),
    ({}, 8, "not 16-byte aligned"),
])  # fmt: skip
def test_each_rule_the_tma_enforces_is_named(change: dict, address: int, expected: str) -> None:
    found = problems({**GOOD, **change}, 2, address)
    assert len(found) == 1 and expected in found[0], found


def test_the_wgmma_rung_declares_maps_the_tma_accepts_at_every_ladder_size() -> None:
    family = load_family(ROOT / "kernels", "matmul")
    variant = family.variants["wgmma_fp16"]
    assert variant.arch == "sm_90a"
    assert set(variant.tensor_maps) == {"map_a", "map_b"}
    assert variant.row_alignment == {"A": 16, "B": 16}
    for m, n, k in [(4096, 4096, 4096), (1023, 1023, 1023), (2049, 2049, 2049), (300, 517, 129),
                    (7, 5, 3)]:  # fmt: skip
        dims = {"M": m, "N": n, "K": k}
        env = family.scope(variant, dims, variant.params, ("float16", "float32"))
        assert (env["ld_A"], env["ld_B"]) == (-(-k // 8) * 8, -(-n // 8) * 8)
        for name in ("map_a", "map_b"):
            assert problems(variant.tensor_maps[name].sizes(env), 2, 0) == [], (name, m, n, k)
        if k % 8 or n % 8:  # the maps of the unpadded inputs would be refused
            unpadded = {**env, "ld_A": k, "ld_B": n}
            assert any(problems(variant.tensor_maps[name].sizes(unpadded), 2, 0)
                       for name in ("map_a", "map_b"))  # fmt: skip


def _variant_file(tmp_path: Path, front: str) -> Path:
    folder = tmp_path / "kernels"
    (folder / "matmul").mkdir(parents=True)
    (folder / "matmul" / "family.py").write_text((ROOT / "kernels/matmul/family.py").read_text())
    declared = yaml.safe_load((ROOT / "kernels/matmul/family.yaml").read_text())
    ladder = {k: v for k, v in declared.items() if k not in ("order", "speedup_over")}
    (folder / "matmul" / "family.yaml").write_text(yaml.safe_dump(ladder))  # probe alone
    (folder / "matmul" / "probe.cu").write_text(
        f"/*---\n{front}\n---*/\n#ifndef BM\n#define BM 64\n#endif\n"
        'extern "C" __global__ void probe(const void* a) {}\n'
    )
    return folder


@pytest.mark.parametrize(("front", "expected"), [
    ("kernel: probe\nblock: 32\ngrid: 1\narch: sm90", "arch: 'sm90' holds characters that are not"),
    ("kernel: probe\nblock: 32\ngrid: 1\ntensor_maps:\n  m: {tensor: Q, shape: 'M, K', ld: K, "
     "box: '64, 64'}", "tensor 'Q' is neither a tensor of the family"),
    ("kernel: probe\nblock: 32\ngrid: 1\ntensor_maps:\n  m: {tensor: A, shape: M, ld: K, "
     "box: '64, 64'}", "shape and box each need two expressions"),
    ("kernel: probe\nblock: 32\ngrid: 1\nparams: {BM: 64}\ntensor_maps:\n  BM: {tensor: A, "
     "shape: 'M, K', ld: K, box: '64, 64'}", "the name must be an identifier of its own"),
    ("kernel: probe\nblock: 32\ngrid: 1\ntensor_maps:\n  m: {tensor: A, shape: 'M, K'}",
     "tensor_maps.m: 'ld' is a required property"),
    ("launches:\n  - {kernel: probe, block: 32, grid: 1, args: [mapp, C, M, N, K]}\n"
     "tensor_maps:\n  m: {tensor: A, shape: 'M, K', ld: K, box: '64, 64'}",
     "neither a tensor, a scratch buffer, a tensor map nor a scalar"),
])  # fmt: skip
def test_bad_hopper_keys_are_refused_with_what_is_expected(
    tmp_path: Path, front: str, expected: str
) -> None:
    with pytest.raises(SpecError, match=r"probe\.cu") as caught:
        load_family(_variant_file(tmp_path, front), "matmul")
    assert expected in str(caught.value)
