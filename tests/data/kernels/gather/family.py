"""gather: the inputs that need the family's knowledge, the reference and a host variant."""

from __future__ import annotations

from typing import Any

import numpy as np


def draw(dims: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Indices into x, each in [0, m); x itself is drawn as family.yaml declares."""
    return {"idx": rng.integers(0, dims["m"], size=dims["n"], dtype=np.int32)}


def reference(x: Any, idx: Any, alpha: float, m: int) -> dict[str, Any]:
    """Scaled gather and histogram in float64 (x) and integers (idx)."""
    xp = np if isinstance(x, np.ndarray) else __import__("cupy")
    return {"y": alpha * x[idx], "hits": xp.bincount(idx, minlength=m)}


def gather_values(x: Any, idx: Any, y: Any, alpha: float) -> None:
    """Host variant, step 1: NumPy's fancy indexing, scaled, into the poisoned output."""
    np.multiply(alpha, x[idx], out=y)


def count_hits(idx: Any, hits: Any, m: int) -> None:
    """Host variant, step 2: the histogram of the indices."""
    hits[...] = np.bincount(idx, minlength=m)
