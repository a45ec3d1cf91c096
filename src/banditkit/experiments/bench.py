"""``banditkit bench``: run the speed benchmarks of ``benchmarks/`` and collect their output.

A benchmark is a script ``benchmarks/<name>.py`` (names starting with "_" are skipped) that
defines ``main(quick: bool, out: Path)``. Each runs in this process with its own folder
``DIR/<name>/`` and may return a JSON-able dict; ``DIR/bench.json`` collects the returns, wall
times and errors::

    {"quick": true, "benchmarks": {"<name>": {"status": "ok", "result": {...}, "seconds": 1.2}}}
"""

from __future__ import annotations

import importlib.util
import json
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from banditkit.experiments.store import RunStore

__all__ = ["discover", "run_benchmarks"]


def discover(directory: str | Path, only: Sequence[str] | None = None) -> list[Path]:
    """Benchmark scripts of ``directory`` (sorted), optionally only the stems in ``only``."""
    scripts = sorted(
        p for p in Path(directory).glob("*.py") if not p.name.startswith("_")
    )
    if only:
        scripts = [p for p in scripts if p.stem in only]
    return scripts


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"banditkit_bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_benchmarks(
    scripts: Sequence[Path],
    out: str | Path,
    *,
    quick: bool = False,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run each script's ``main(quick=..., out=DIR/<name>)``; write and return bench.json.

    A script without ``main`` is skipped; one that raises is recorded with its traceback.

    Raises:
        OutputDirError: If ``out`` cannot be written.
    """
    out = Path(out)
    store = RunStore(out)
    store.prepare(subdirs=False)
    results: dict[str, Any] = {}
    for path in scripts:
        started = time.perf_counter()
        try:
            main_fn = getattr(_load(path), "main", None)
            if main_fn is None:
                continue
            target = out / path.stem
            target.mkdir(parents=True, exist_ok=True)
            entry: dict[str, Any] = {
                "status": "ok",
                "result": main_fn(quick=quick, out=target),
            }
        except Exception as exc:
            entry = {
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        entry["seconds"] = time.perf_counter() - started
        results[path.stem] = entry
        if log is not None:
            log(f"{path.stem}: {entry['status']} ({entry['seconds']:.1f} s)")
    document = json.loads(
        json.dumps({"quick": quick, "benchmarks": results}, default=str)
    )
    store.write_json("bench.json", document)
    return document
