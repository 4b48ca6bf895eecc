"""histogram: the draw of values in range and the float64 reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def draw(dims: Mapping[str, int], rng: np.random.Generator) -> dict[str, Any]:
    """Values uniform in [0, BINS): every bin is hit about N / BINS times."""
    return {"values": rng.integers(0, dims["BINS"], size=dims["N"], dtype=np.int32)}


def reference(values: Any, BINS: int) -> dict[str, Any]:
    """How many values fall in each bin, as float64."""
    xp = np if isinstance(values, np.ndarray) else __import__("cupy")
    counts = xp.bincount(values.astype(xp.int64), minlength=BINS)
    return {"counts": counts.astype(xp.float64)}
