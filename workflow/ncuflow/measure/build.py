"""Building a configuration: its cubin loaded from the compile stage's cache, or its CUDA
source compiled with NVRTC (through CuPy, which caches the binary per source and
options), and each launch bound to its arguments, or a library call bound; the steps that
pad an aligned input's rows; tensor maps encoded."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..compile.cubins import compile_options, compiled_cubin
from ..errors import NcuflowError
from ..gpu import cuda_errors, cupy
from ..plan import ConfigRow
from ..runlog import add_time
from ..spec.model import Launch, TensorMap, Variant, leading_dim
from .helpers import copy_rows
from .tma import TensorMapError, encode

if TYPE_CHECKING:
    from ..spec.family import Family
    from .problem import Problem


class LaunchRefused(NcuflowError):
    """The device refused a configuration's launch settings before any launch."""


@dataclass
class Launcher:
    """A compiled configuration: its steps (one per launch) in order; ``launch`` runs them
    all once on the current stream, ``reset`` (untimed, before every launch) gives inouts
    their drawn values back. A host variant's steps run on the host."""

    steps: list[tuple[str, Callable[[], None]]]
    attributes: dict[str, int]
    on_host: bool = False
    # the steps only enqueue GPU work, so a batch may wait behind a gate (Gate); a step that
    # moves host memory may wait for the stream, which a held stream would never reach
    gated: bool = False
    reset: Callable[[], None] = field(default=lambda: None)
    # why CUDA was compiled here (CuPy's NVRTC), not loaded from the compile stage's cubin
    # ('' where it was loaded, or is no CUDA): where a job's time went says so
    compiled_here: str = ""

    def launch(self) -> None:
        for _, step in self.steps:
            step()


def _step_args(
    launch: Launch, variant: Variant, problem: Problem, env: dict[str, int]
) -> tuple[Any, ...]:
    """A launch's arguments: its own list (names or index expressions) or the family's."""
    if launch.args is None:
        return tuple(problem.arg(a) for a in problem.family.args)
    named = {*problem.inputs, *problem.outputs, *variant.scratch, *variant.tensor_maps,
             *problem.scalars}  # fmt: skip
    return tuple(problem.arg(a.text) if a.text in named else problem.index(int(a(env)))
                 for a in launch.args)  # fmt: skip


def _library_step(
    fn: Callable[..., Any], args: tuple[Any, ...], params: dict[str, int], problem: Problem
) -> Callable[[], None]:
    def step() -> None:
        returned = fn(*args, **params)
        if isinstance(returned, dict):  # outputs the library allocated itself (cuDNN)
            problem.returned.update(returned)

    return step


def build_launcher(family: Family, variant: Variant, row: ConfigRow, problem: Problem) -> Launcher:
    """Load the compile stage's cubin or compile (CuPy caches the binary per source and
    options), and bind the arguments of each launch the configuration makes."""
    # with the device facts the row was planned with, where what it launches follows them
    env = {**family.scope(variant, row.dims, row.params, (problem.in_dtype, problem.out_dtype)),
           **(row.grid_facts or {})}  # fmt: skip
    by_name = {launch.name: launch for launch in variant.launches}
    active = [(by_name[g.name], g) for g in row.launches]
    module, cubin, why = None, None, ""
    if variant.arch:
        _check_arch(variant.arch)
    if variant.is_cuda:
        dtypes = (problem.in_dtype, problem.out_dtype)
        options = compile_options(family, variant, row.params, dtypes)
        # the compile stage's cubin, where it built one for this GPU; else CuPy compiles
        capability = cupy().cuda.Device().compute_capability
        cubin, why = compiled_cubin(options, variant, capability)
        module = (cupy().RawModule(path=str(cubin)) if cubin is not None
                  else cupy().RawModule(code=variant.source, options=options))  # fmt: skip
    used = {a.text for launch, _ in active for a in launch.args or ()}
    maps = [variant.tensor_maps[name] for name in sorted(used & set(variant.tensor_maps))]
    described = {m.tensor for m in maps}
    problem.prepare_scratch(env, {name: tensor for name, tensor in variant.scratch.items()
                                  if name in used | described})  # fmt: skip
    # only kernels take aligned inputs (spec.launches): the copies are the harness's kernel's
    lengths = {name: env[leading_dim(name)] for name in variant.row_alignment}
    steps = problem.pad_rows(lengths, copy_rows)
    for tensor_map in maps:  # after the buffers they may describe
        problem.scratch[tensor_map.name] = _device_tensor_map(tensor_map, problem, env)
    attributes: dict[str, int] = {}
    for launch, geometry in active:
        args = _step_args(launch, variant, problem, env)
        if launch.library:
            fn = family.function(launch.library)
            steps.append((launch.name, _library_step(fn, args, row.params, problem)))
            continue
        assert module is not None
        kernel = module.get_function(launch.kernel)
        dynamic_smem = int(geometry.dynamic_smem or 0)
        if dynamic_smem > 48 * 1024:
            try:
                kernel.max_dynamic_shared_size_bytes = dynamic_smem
            except cuda_errors() as exc:  # the device's limit is lower than the declared one
                raise LaunchRefused(
                    f"{launch.name}: the device refuses {dynamic_smem} B of dynamic shared "
                    f"memory ({exc}); lower device_limits.max_smem_per_block_optin to its limit"
                ) from None
        grid, block = geometry.grid, geometry.block
        steps.append(
            (launch.name, functools.partial(kernel, grid, block, args, shared_mem=dynamic_smem))
        )
        # the variant's largest kernel stands for it in the table
        for key, value in (("registers_per_thread_compiled", kernel.num_regs),
                           ("static_smem_bytes", kernel.shared_size_bytes),
                           ("local_bytes_per_thread", kernel.local_size_bytes)):  # fmt: skip
            attributes[key] = max(attributes.get(key, 0), int(value))
    on_device = all(t.memory == "device" for t in family.tensors.values())
    on_gpu = variant.runs_on == "gpu"
    return Launcher(steps, attributes, on_host=not on_gpu, gated=on_gpu and on_device,
                    reset=problem.restore,
                    compiled_here=why)  # fmt: skip


def timed_build(family: Family, variant: Variant, row: ConfigRow, problem: Problem,
                phases: dict[str, float], notes: set[str]) -> Launcher:  # fmt: skip
    """build_launcher, its seconds added to ``phases``: to compile where CuPy compiled the
    configuration (and why in ``notes``), to build where the compile stage's cubin loaded
    (or none was needed)."""
    with add_time(phases, "build") as phase:
        launcher = build_launcher(family, variant, row, problem)
        if launcher.compiled_here:
            phase.name = "compile"
            notes.add(f"{variant.name} compiled here, not loaded: {launcher.compiled_here}")
    return launcher


def _check_arch(arch: str) -> None:
    """Refuse, before compiling, a variant built for another architecture than this GPU's
    (sm_90a code runs on compute capability 9.0 only)."""
    capability = cupy().cuda.Device().compute_capability  # '90'
    if arch.removeprefix("sm_").rstrip("a") != capability:
        raise LaunchRefused(f"the kernels are built for {arch}; this GPU is compute "
                            f"capability {capability[:-1]}.{capability[-1]}")  # fmt: skip


def _device_tensor_map(tensor_map: TensorMap, problem: Problem, env: dict[str, int]) -> Any:
    """A tensor map of one configuration, encoded on the host and copied to the device
    (kernels take its address)."""
    array = problem.arg(tensor_map.tensor)
    try:
        encoded = encode(tensor_map, tensor_map.sizes(env), str(array.dtype), array.data.ptr)
    except TensorMapError as exc:  # refused before any launch, like too much shared memory
        raise LaunchRefused(str(exc)) from None
    return cupy().asarray(np.frombuffer(encoded, dtype=np.uint8))
