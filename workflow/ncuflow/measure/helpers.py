"""The harness's own kernels (compile.cubins.HELPERS and the row copy): each loaded from
the compile stage's cubin where this job was given one, else compiled here with CuPy. The
measure stage's modules use them; they use none of those modules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..compile.cubins import HELPER_OPTIONS, compiled_helper, helper_source
from ..gpu import cuda_errors, cupy

# The unsigned C type of each element size (the row copy moves bits, whatever the dtype).
UNSIGNED = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long",
            16: "uint4"}  # fmt: skip


@functools.cache
def helper_kernel(name: str, kernel: str) -> Any:
    """A kernel of one of the harness's own sources (compile.cubins.HELPERS), loaded from the
    compile stage's cubin for this GPU where this job was given one, else compiled here
    (CuPy caches it), as it is where the cubin does not load (a driver older than NVRTC)."""
    cp = cupy()
    cubin = compiled_helper(name, cp.cuda.Device().compute_capability)
    if cubin is not None:
        try:
            return cp.RawModule(path=str(cubin)).get_function(kernel)
        except cuda_errors():
            pass
    return cp.RawModule(code=helper_source(name), options=HELPER_OPTIONS).get_function(kernel)


def pad_rows_name(element_bytes: int, chunk_bytes: int) -> str:
    """The instance of pad_rows.cu's template that copies elements of one size in chunks of
    another."""
    return f"ncuflow_pad_rows<{UNSIGNED[element_bytes]}, {UNSIGNED[chunk_bytes]}>"


@functools.cache
def _pad_rows_kernel(element_bytes: int, chunk_bytes: int) -> Any:
    name = pad_rows_name(element_bytes, chunk_bytes)
    module = cupy().RawModule(code=helper_source("pad_rows"), options=HELPER_OPTIONS,
                              name_expressions=[name])  # fmt: skip
    return module.get_function(name)


ROW_COPY_BLOCK = 256  # threads per block of the row copy


def row_copy_shape(rows: int, ld: int, element_bytes: int, sm_count: int) -> tuple[int, int]:
    """(bytes each thread stores at once, blocks) of the copy into rows of ``ld`` elements:
    the largest power of two up to 16 that divides a padded row, and a grid-stride loop of
    at most 8 blocks per SM."""
    row_bytes = ld * element_bytes
    chunk = min(16, row_bytes & -row_bytes)
    chunks = rows * row_bytes // chunk
    return chunk, max(1, min(-(-chunks // ROW_COPY_BLOCK), 8 * sm_count))


def copy_rows(padded: Any, source: Any) -> Callable[[], None]:
    """The step that copies ``source`` (rows × cols) into the row-padded ``padded``
    (rows × ld, ld·element size a multiple of 2^n bytes) with 16-byte stores where the padded
    rows allow, leaving zeros past cols: CuPy's copy into a strided view ran twice as long."""
    rows, cols, ld = source.size // source.shape[-1], source.shape[-1], padded.shape[-1]
    element = source.dtype.itemsize
    sm_count = cupy().cuda.Device().attributes["MultiProcessorCount"]
    chunk, blocks = row_copy_shape(rows, ld, element, sm_count)
    kernel = _pad_rows_kernel(element, chunk)
    args = (source, padded, np.int64(rows), np.int32(cols), np.int32(ld))
    return functools.partial(kernel, (blocks,), (ROW_COPY_BLOCK,), args)
