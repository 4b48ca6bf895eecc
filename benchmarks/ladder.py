"""The matmul ladder at one size, from a collected table, and the issues' targets.

Prints, for each variant, its fastest configuration at M = N = K = SIZE (parameters,
TFLOP/s, share of the cuBLAS baseline of the same precision, bound), as a Markdown table,
then checks: the best float32 kernel reaches 75 % of cublas_fp32; the best fp16 (WMMA)
kernel 15 % of cublas_fp16; naive < coalesced_a < smem_tiled < every register-tiled rung;
the Hopper targets (issue 12): the best float32 kernel at 90 % of cuBLAS, mma_fp16 at
60 % and wgmma_fp16 at 85 % of cuBLAS fp16; and at the awkward size AWKWARD (no tile
divides it), where the table has it: the best fp16 kernel at least as fast as cuBLAS fp16,
and every kernel's fastest configuration timed with a CV of at most 2 %.
Works on a GPU run's table and on a replayed one.

    python benchmarks/ladder.py [--table results/matmul_ladder/table.parquet] [--size 4096]
                                [--awkward 2049]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from ncuflow.report.summary import ladder  # noqa: E402
from ncuflow.spec import load_family  # noqa: E402

FP32_TARGET_PCT, FP16_TARGET_PCT = 75.0, 15.0
HOPPER_FP32_TARGET_PCT = 90.0
RUNG_TARGETS_PCT = {"mma_fp16": 60.0, "wgmma_fp16": 85.0}  # of cuBLAS of the same precision
ORDER = ["naive", "coalesced_a", "smem_tiled"]
REGISTER_TILED = ["regtile_vd", "regtile_2d", "double_buffer", "warptile", "stream_k"]
AWKWARD_CV_MAX = 0.02  # the spread of a kernel's launches (std / mean) at the awkward size


def markdown(rows: pd.DataFrame) -> str:
    family = load_family(ROOT / "kernels", rows["family"].iloc[0])
    lines = ["| variant | dtype | parameters | TFLOP/s | % of cuBLAS | roof | bound (level) |",
             "|---|---|---|---:|---:|---|---|"]  # fmt: skip
    for row in rows.itertuples():
        params = family.variants[row.variant].params
        shown = ", ".join(f"{p}={getattr(row, p)}" for p in params) or "–"
        pct = "–" if pd.isna(row.pct_of_library) else f"{row.pct_of_library:.1f}"
        bound = f"{row.bound} ({row.bound_level})" if isinstance(row.bound, str) else "–"
        roof = row.roof if isinstance(row.roof, str) and row.roof else "–"
        cells = [row.variant, row.dtype, shown, f"{row.tflops:.2f}", pct, roof, bound]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(rows: pd.DataFrame) -> list[tuple[bool, str]]:
    own = rows[~rows["baseline"].astype(bool)].set_index("variant")
    checks = []
    best_of = (("float32", FP32_TARGET_PCT), ("float16", FP16_TARGET_PCT),
               ("float32", HOPPER_FP32_TARGET_PCT))  # fmt: skip
    for dtype, target in best_of:
        kernels = own[own["dtype"] == dtype]
        if kernels.empty or kernels["pct_of_library"].isna().all():
            checks.append((False, f"no {dtype} kernel and cuBLAS {dtype} pair at this size"))
            continue
        best = kernels["pct_of_library"].idxmax()
        pct = kernels.loc[best, "pct_of_library"]
        checks.append((pct >= target, f"best {dtype} kernel {best}: {pct:.1f} % of cuBLAS "
                                      f"(target {target:.0f} %)"))  # fmt: skip
    for variant, target in RUNG_TARGETS_PCT.items():
        pct = own["pct_of_library"].get(variant)
        if pct is None or pd.isna(pct):
            checks.append((False, f"{variant}: not in the table with a cuBLAS pair"))
        else:
            checks.append((pct >= target, f"{variant}: {pct:.1f} % of cuBLAS (target "
                                          f"{target:.0f} %)"))  # fmt: skip
    tflops = own["tflops"]
    rungs = [v for v in ORDER if v in tflops]
    register_tiled = [v for v in REGISTER_TILED if v in tflops]
    monotone = all(tflops[a] < tflops[b] for a, b in itertools.pairwise(rungs))
    if "smem_tiled" in tflops:
        monotone &= all(tflops[v] > tflops["smem_tiled"] for v in register_tiled)
    shown = " < ".join(f"{v} {tflops[v]:.2f}" for v in rungs + register_tiled)
    checks.append((monotone, f"ladder naive < coalesced_a < smem_tiled < register-tiled: {shown}"))
    return checks


def awkward_targets(rows: pd.DataFrame, size: int, expected: list[str]) -> list[tuple[bool, str]]:
    """At a size no tile divides: the best fp16 kernel against cuBLAS fp16, and the
    steadiness of every kernel's fastest configuration; a kernel of ``expected`` with no
    ok configuration there fails the latter."""
    own = rows[~rows["baseline"].astype(bool)].set_index("variant")
    library = rows[rows["variant"] == "cublas_fp16"]["tflops"]
    fp16 = own[own["dtype"] == "float16"]["tflops"]
    if library.empty or fp16.empty:
        checks = [(False, f"no fp16 kernel and cublas_fp16 pair at {size}")]
    else:
        best, rate = fp16.idxmax(), fp16.max()
        checks = [(rate >= library.iloc[0], f"best float16 kernel at {size} {best}: "
                   f"{rate:.1f} TFLOP/s, cublas_fp16 {library.iloc[0]:.1f}")]  # fmt: skip
    unsteady = own[~(own["time_cv"] <= AWKWARD_CV_MAX)]["time_cv"]  # NaN: not known steady
    listed = [f"{v} {cv * 100:.1f} %" for v, cv in unsteady.items()]
    listed += [f"{v} not measured" for v in expected if v not in own.index]
    checks.append((not listed, f"every kernel's CV at {size} within "
                               f"{AWKWARD_CV_MAX * 100:.0f} %; above: "
                               f"{', '.join(listed) or 'none'}"))  # fmt: skip
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=ROOT / "results/matmul_ladder/table.parquet")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--awkward", type=int, default=2049)
    args = parser.parse_args()
    table = pd.read_parquet(args.table)
    rows = ladder(table, {"M": args.size, "N": args.size, "K": args.size})
    if rows.empty:
        print(f"{args.table} has no ok configuration at M = N = K = {args.size}", file=sys.stderr)
        return 1
    print(markdown(rows))
    print()
    checks = targets(rows)
    awkward = ladder(table, {"M": args.awkward, "N": args.awkward, "K": args.awkward})
    if not awkward.empty:
        kernels = rows.loc[~rows["baseline"].astype(bool), "variant"].tolist()
        checks += awkward_targets(awkward, args.awkward, kernels)
    for passed, text in checks:
        print(f"{'PASS' if passed else 'FAIL'}  {text}")
    return 0 if all(passed for passed, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
