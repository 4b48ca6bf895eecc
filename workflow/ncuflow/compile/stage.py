"""The compile stage: every distinct CUDA build of an experiment's measure jobs compiled
with NVRTC into the cubin cache (those it already holds kept), on ``workers`` processes,
and the experiment's index written (compile.cubins)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

from ..children import pool_worker
from ..files import atomic_write
from ..nvrtc import CompileFailed, bindings, compile_cubin, version
from ..plan import ConfigRow
from ..spec import load_variant
from ..spec.family import Family
from ..spec.model import Variant
from ..study.config import part_plan
from .cubins import (
    HELPERS,
    build_key,
    compile_options,
    cubin_name,
    helper_build,
    nvrtc_options,
    source_digest,
)
from .ptxas import report_path


class Build(NamedTuple):
    """One cubin to compile, and the first configuration that needs it."""

    source: str
    name: str  # the source's name in NVRTC's messages
    options: tuple[str, ...]  # NVRTC's
    path: str  # the cubin's, in the cache
    row: ConfigRow | None = None  # None: one of the harness's own kernels


def gpu_arch() -> str | None:
    """sm_<major><minor> of this machine's first GPU, from nvidia-smi; None without one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    found = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    lines = found.stdout.split()
    return f"sm_{lines[0].replace('.', '')}" if found.returncode == 0 and lines else None


def _build(build: Build) -> str | None:
    """One cubin into its path (written whole or not at all), a variant's with ptxas's
    report beside it, written first; NVRTC's refusal, if any."""
    try:
        compiled = compile_cubin(build.source, build.name, build.options)
    except CompileFailed as exc:
        return str(exc).splitlines()[0] if str(exc) else "refused"
    if build.row is not None:
        atomic_write(report_path(Path(build.path)), compiled.log)
    atomic_write(Path(build.path), compiled.cubin)
    return None


def compile_stage(jobs: Sequence[tuple[Path, str]], index: Path, cache: Path, arch: str | None,
                  workers: int, log: Callable[[str], None],
                  proposals: Path | None = None) -> None:  # fmt: skip
    """Compile what the cache lacks of every CUDA configuration of ``jobs`` ((variant plan,
    part) of each measure job; in a search, of the round file ``proposals``) for ``arch``,
    and write the index: without NVRTC's Python bindings or an architecture, an empty one
    (the GPU jobs then compile, as before)."""
    started = time.perf_counter()
    why_not = ("no GPU architecture (no nvidia-smi here, and none given)" if arch is None
               else None if bindings() is not None else "NVRTC's Python bindings are not "
               "installed")  # fmt: skip
    if why_not is not None:
        log(f"nothing compiled ahead: {why_not}; the GPU jobs compile")
        atomic_write(index, json.dumps({"arch": arch, "cubins": {}}))
        return
    nvrtc = version()
    cache.mkdir(parents=True, exist_ok=True)
    entries: dict[str, str] = {}
    pending: dict[str, Build] = {}
    helpers: dict[str, str] = {}
    for variant_plan, part in jobs:
        plan = part_plan(variant_plan, part, proposals)
        family, variant = load_variant(Path(plan.kernels_dir), plan.family, plan.variant)
        if variant.runs_on == "gpu" and not helpers:  # a GPU job checks, gates and flushes
            for name in HELPERS:
                source, options, file_name = helper_build(name, arch, nvrtc)
                path = cache / file_name
                helpers[name] = str(path.resolve())
                if not path.is_file():
                    pending[str(path)] = Build(source, f"{name}.cu", options, str(path))
        if not variant.is_cuda:
            continue
        for key, build in variant_builds(family, variant, plan.pending, arch, nvrtc,
                                         cache).items():  # fmt: skip
            entries[key] = str(Path(build.path).resolve())
            if not Path(build.path).is_file():
                pending[build.path] = build
    builds = len(entries) + len(helpers)
    log(f"{len(entries)} builds for {arch} (NVRTC {nvrtc}) and {len(helpers)} of the harness: "
        f"{builds - len(pending)} in the cache, {len(pending)} to compile on {workers} "
        "processes")  # fmt: skip
    refused = compile_all(list(pending.values()), workers)
    for out, why in refused.items():
        log(f"NVRTC refused {Path(out).name} ({why}): the GPU job compiles it and says why")
        entries = {k: v for k, v in entries.items() if v != str(Path(out).resolve())}
        helpers = {k: v for k, v in helpers.items() if v != str(Path(out).resolve())}
    atomic_write(index, json.dumps({"arch": arch, "nvrtc": nvrtc, "cubins": entries,
                                    "helpers": helpers}, indent=1))  # fmt: skip
    log(f"compiled in {time.perf_counter() - started:.1f} s")


def variant_builds(family: Family, variant: Variant, rows: Sequence[ConfigRow], arch: str,
                   nvrtc: str, cache: Path) -> dict[str, Build]:  # fmt: skip
    """Each distinct build of a CUDA variant's ``rows`` (those a restriction skips are never
    built), by build key: what compile_all compiles into ``cache``."""
    sources, builds = source_digest(variant), {}
    for row in rows:
        options = compile_options(family, variant, row.params, (row.dtype, row.out_dtype))
        key = build_key(variant, options)
        if key not in builds:
            path = cache / cubin_name(sources, options, arch, nvrtc)
            # named as CuPy names a source, which source lines read as the variant's own
            builds[key] = Build(
                variant.source,
                f"{variant.path.stem}.cubin.cu",
                nvrtc_options(options, variant, arch),
                str(path),
                row,
            )
    return builds


def compile_all(work: list[Build], workers: int) -> dict[str, str]:
    """Each build of ``work``; {cubin path: why} of those NVRTC refused."""
    if workers <= 1 or len(work) <= 1:
        results = [_build(w) for w in work]
    else:  # processes: NVRTC holds the interpreter while it compiles
        context, stage = multiprocessing.get_context("fork"), os.getpid()
        with ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                 initializer=pool_worker, initargs=(stage,)) as pool:  # fmt: skip
            results = list(pool.map(_build, work))
    return {w.path: why for w, why in zip(work, results, strict=True) if why is not None}
