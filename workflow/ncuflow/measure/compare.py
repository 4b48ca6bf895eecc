"""The check of one output against its float64 reference: the poison an unwritten element
still holds, NaN or Inf the kernel wrote, and the relative Frobenius and largest absolute
errors. A floating output in device memory is compared in one kernel (compare.cu, built
ahead by the compile stage), any other with array operations of its module (NumPy or
CuPy)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.model import Check
from .helpers import helper_kernel

# The poison of floating outputs: a NaN with a payload no arithmetic produces (a computed
# NaN is the canonical quiet one), so that "never written" and "NaN written" stay apart.
POISON_BITS = {2: 0x7D5A, 4: 0x7FA5A5A5, 8: 0x7FF4A5A5A5A5A5A5}
UINT = {2: "uint16", 4: "uint32", 8: "uint64"}
COMPARE_THREADS = 256  # compare.cu's kThreads: the kernel traps on any other block size
COMPARE_BLOCKS = 1024  # at most: each block's partial figures come back to the host


def poisoned(out: Any) -> Any:
    """Where a floating output still holds the poison (a boolean array)."""
    size = np.dtype(out.dtype).itemsize
    return out.view(UINT[size]) == POISON_BITS[size]


def array_module(array: Any) -> Any:
    """cupy for an array in device memory, numpy otherwise (page-locked ones included)."""
    if hasattr(array, "__cuda_array_interface__"):
        import cupy

        return cupy
    return np


def moved_to(xp: Any, array: Any) -> Any:
    """``array`` moved to the module ``xp`` (a NumPy reference checks a CuPy output)."""
    if array_module(array) is xp:
        return array
    return xp.asarray(array) if xp is not np else array.get()


@dataclass
class Outcome:
    """The check of one configuration's outputs."""

    ok: bool
    message: str
    rel_error: float | None
    max_abs_error: float | None


@dataclass
class Figures:
    """What the check reads of an output against its reference."""

    unwritten: int  # elements still holding the poison (floating outputs)
    bad: int  # NaN or Inf where the reference is finite (floating outputs)
    unequal: int | None  # elements unequal to the reference (None: not counted)
    diff_norm: float  # ‖out - ref‖_F
    ref_norm: float  # ‖ref‖_F
    max_abs: float  # largest |out - ref|


def fused_figures(out: Any, ref: Any) -> Figures | None:
    """The figures of a floating CuPy output against a float64 one in one kernel (each
    block's partial figures added on the host, in block order); None where ``out`` is not
    such an array (the array operations then compare)."""
    kind = np.dtype(out.dtype)
    if (array_module(out) is np or kind.kind != "f" or kind.itemsize not in UINT
            or ref.dtype != np.float64 or not (out.flags.c_contiguous
                                               and ref.flags.c_contiguous)):  # fmt: skip
        return None
    cp = array_module(out)
    blocks = max(1, min(-(-out.size // COMPARE_THREADS), COMPARE_BLOCKS))
    partial = cp.empty((blocks, 6), dtype=cp.float64)
    kernel = helper_kernel("compare", f"ncuflow_compare_{kind.itemsize}")
    poison = np.dtype(UINT[kind.itemsize]).type(POISON_BITS[kind.itemsize])
    kernel((blocks,), (COMPARE_THREADS,),
           (out.view(UINT[kind.itemsize]), ref, np.uint64(out.size), poison, partial))  # fmt: skip
    figures = partial.get()
    counts, squares = figures[:, :3].sum(axis=0), figures[:, 3:5].sum(axis=0)
    return Figures(int(counts[0]), int(counts[1]), int(counts[2]), math.sqrt(squares[0]),
                   math.sqrt(squares[1]), float(figures[:, 5].max()))  # fmt: skip


def array_figures(out: Any, ref: Any, unequal: bool) -> Figures:
    """The figures by array operations of the output's module (``unequal``: count them);
    where an element is unwritten or bad, those counts alone (the check stops there, and
    the poison, a signalling NaN, would warn in the casts)."""
    xp = array_module(out)
    unwritten = bad = 0
    if np.dtype(out.dtype).kind == "f":
        unwritten = int(poisoned(out).sum())
        bad = 0 if unwritten else int((~xp.isfinite(out) & xp.isfinite(ref)).sum())
        if unwritten or bad:
            return Figures(unwritten, bad, None, math.nan, math.nan, math.nan)
    diff = out.astype(xp.float64) - ref.astype(xp.float64)
    return Figures(
        unwritten, bad, int((out != ref).sum()) if unequal else None,
        float(xp.linalg.norm(diff.ravel())), float(xp.linalg.norm(ref.astype(xp.float64).ravel())),
        float(xp.abs(diff).max()) if diff.size else 0.0,
    )  # fmt: skip


def compare(
    name: str, out: Any, ref: Any, check: Check | None, dtype: str, fused: bool = True
) -> Outcome:
    """One output against its reference: never-written elements first, then the check
    (``rel_fro``, ``max_abs`` or ``exact``); the relative Frobenius and largest absolute
    errors are measured whatever the check (``fused``: in one kernel where the output
    allows, the array operations otherwise)."""
    ref = moved_to(array_module(out), ref)
    if tuple(out.shape) != tuple(ref.shape):
        return Outcome(
            False, f"reference {name} has shape {ref.shape}, output {out.shape}", None, None
        )
    exact = check is not None and check.kind == "exact"
    figures = (fused_figures(out, ref) if fused and out.size else None) or array_figures(
        out, ref, exact
    )
    if figures.unwritten:
        return Outcome(
            False, f"{figures.unwritten} of {out.size} elements of {name} never written", None,
            None,
        )  # fmt: skip
    if figures.bad:
        return Outcome(
            False, f"{figures.bad} of {out.size} elements of {name} are NaN or Inf written by "
            "the kernel where the reference is finite", None, None,
        )  # fmt: skip
    rel = figures.diff_norm / (figures.ref_norm or 1.0) if out.size else 0.0
    max_abs = figures.max_abs
    if check is None:
        return Outcome(True, "", rel, max_abs)
    limit = check.limit(dtype)
    if exact:
        ok = figures.unequal == 0
        message = (
            ""
            if ok
            else (
                f"{figures.unequal} of {out.size} elements of {name} differ from the reference "
                f"(largest difference {max_abs:.6g})"
            )
        )
    elif check.kind == "max_abs":
        ok = max_abs <= limit
        message = "" if ok else f"largest absolute error {max_abs:.3g} of {name} exceeds {limit:g}"
    else:
        ok = rel <= limit
        message = "" if ok else f"relative error {rel:.3g} of {name} exceeds {limit:g}"
    return Outcome(ok, message, rel, max_abs)
