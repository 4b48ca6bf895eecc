"""faulty: the reference of y = 2·x."""

from __future__ import annotations

from typing import Any


def reference(x: Any) -> dict[str, Any]:
    return {"y": 2 * x}
