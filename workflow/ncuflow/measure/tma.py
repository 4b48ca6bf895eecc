"""Tensor maps encoded for the TMA, per configuration, on the host with the driver's
``cuTensorMapEncodeTiled`` (called through ctypes: no binding package needed). The rules
the driver would refuse with a bare error code are checked first, with one message each.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Mapping

from ..errors import NcuflowError
from ..spec.model import TensorMap

SWIZZLE_BYTES = 128  # CU_TENSOR_MAP_SWIZZLE_128B: the layout wgmma reads without conflicts
MAX_BOX = 256  # elements per box dimension
MAP_BYTES = 128  # sizeof(CUtensorMap)
# CUtensorMapDataType and element size, by element type
DATA_TYPES = {"float16": (6, 2), "float32": (7, 4), "bfloat16": (9, 2)}
_SWIZZLE_128B, _L2_PROMOTION_128B, _OOB_FILL_ZEROS, _INTERLEAVE_NONE = 3, 2, 0, 0


class TensorMapError(NcuflowError):
    """A tensor map the TMA cannot use, or the driver refused."""


@functools.cache
def _driver() -> ctypes.CDLL:
    """The CUDA driver library, loaded once per process."""
    return ctypes.CDLL("libcuda.so.1")


def problems(sizes: Mapping[str, int], element_bytes: int, address: int) -> list[str]:
    """What the TMA would refuse in a map of these sizes, one line each (none: usable)."""
    rows, cols, ld = sizes["rows"], sizes["cols"], sizes["ld"]
    found = []
    for key in ("box_rows", "box_cols"):
        if not 1 <= sizes[key] <= MAX_BOX:
            found.append(f"{key} {sizes[key]} is not within 1..{MAX_BOX}")
    if sizes["box_cols"] * element_bytes > SWIZZLE_BYTES:
        found.append(f"a box row of {sizes['box_cols']} elements is "
                     f"{sizes['box_cols'] * element_bytes} bytes, more than the "
                     f"{SWIZZLE_BYTES}-byte swizzle row")  # fmt: skip
    if rows < 1 or cols < 1:
        found.append(f"the matrix is {rows} × {cols}")
    if ld < cols:
        found.append(f"ld {ld} is less than the {cols} columns")
    if ld * element_bytes % 16:
        found.append(f"rows of {ld} elements are {ld * element_bytes} bytes apart, not a "
                     "multiple of 16")  # fmt: skip
    if address % 16:
        found.append(f"the matrix starts at {address:#x}, not 16-byte aligned")
    return found


def encode(tensor_map: TensorMap, sizes: Mapping[str, int], dtype: str, address: int) -> bytes:
    """The 128 bytes of the tensor map of the matrix at device ``address`` (driver API)."""
    if dtype not in DATA_TYPES:
        raise TensorMapError(f"tensor map {tensor_map.name}: {dtype} elements are not "
                             f"supported; expected one of {', '.join(DATA_TYPES)}")  # fmt: skip
    data_type, element_bytes = DATA_TYPES[dtype]
    found = problems(sizes, element_bytes, address)
    if found:
        raise TensorMapError(f"tensor map {tensor_map.name} of {tensor_map.tensor}: "
                             + "; ".join(found))  # fmt: skip
    try:
        driver = _driver()
    except OSError as exc:
        raise TensorMapError(f"tensor map {tensor_map.name}: no CUDA driver ({exc})") from None
    u64x2, u32x2 = ctypes.c_uint64 * 2, ctypes.c_uint32 * 2
    storage = ctypes.create_string_buffer(MAP_BYTES + 64)  # the map must be 64-byte aligned
    aligned = (ctypes.addressof(storage) + 63) & ~63
    result = driver.cuTensorMapEncodeTiled(
        ctypes.c_void_p(aligned), ctypes.c_int(data_type), ctypes.c_uint32(2),
        ctypes.c_void_p(address),
        u64x2(sizes["cols"], sizes["rows"]),  # innermost dimension first
        (ctypes.c_uint64 * 1)(sizes["ld"] * element_bytes),  # bytes between rows
        u32x2(sizes["box_cols"], sizes["box_rows"]), u32x2(1, 1),
        ctypes.c_int(_INTERLEAVE_NONE), ctypes.c_int(_SWIZZLE_128B),
        ctypes.c_int(_L2_PROMOTION_128B), ctypes.c_int(_OOB_FILL_ZEROS),
    )  # fmt: skip
    if result != 0:
        raise TensorMapError(f"tensor map {tensor_map.name} of {tensor_map.tensor}: "
                             f"cuTensorMapEncodeTiled returned CUresult {result}")  # fmt: skip
    return ctypes.string_at(aligned, MAP_BYTES)
