"""``banditkit bench``: run the speed benchmarks and collect their output; resumable.

A benchmark is a script ``<dir>/<name>.py`` that defines ``main(quick: bool, out: Path)``:
one of the repository's ``benchmarks/`` folder (:func:`checkout_benchmarks`; they are not in
the installed package), or of a folder given with ``--dir`` (names starting with "_" are
skipped). A folder that is a package (it has an ``__init__.py``) is imported as one, so its
scripts can share helpers (``benchmarks._common``). Each runs in this process with its own folder
``DIR/<name>/`` and may return a JSON-able dict; ``DIR/bench.json`` collects the returns,
wall times and errors, and is rewritten after each benchmark::

    {"quick": true, "benchmarks": {"<name>": {"status": "ok", "result": {...}, "seconds": 1.2}}}

Running again into the same ``DIR`` (same ``quick``) keeps the benchmarks already ``ok`` there
and computes the others (failed or new ones); ``rerun=True`` computes everything.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from banditkit.core.errors import BanditkitError, UnknownNameError
from banditkit.core.validation import suggest
from banditkit.experiments.store.store import RunStore

__all__ = ["Benchmark", "checkout_benchmarks", "discover", "run_benchmarks"]

#: A benchmark: the path of its script.
Benchmark = Path

_ROOT = Path(__file__).resolve().parents[3]


def checkout_benchmarks() -> Path | None:
    """The repository's ``benchmarks/`` folder, when banditkit runs from a checkout.

    An editable install (``make setup``) imports banditkit from ``src/banditkit`` of the
    checkout, whose root holds ``benchmarks/``; an installed wheel has none (None).
    """
    folder = _ROOT / "benchmarks"
    if (folder / "__init__.py").is_file() and (_ROOT / "pyproject.toml").is_file():
        return folder
    return None


def discover(
    directory: str | Path | None = None, only: Sequence[str] | None = None
) -> list[Benchmark]:
    """The benchmark scripts to run, sorted: those of ``directory`` or of the checkout.

    Args:
        directory: A folder of benchmark scripts; None for :func:`checkout_benchmarks`.
        only: Keep only these names (script stems).

    Raises:
        BanditkitError: If ``directory`` is None and banditkit does not run from a
            checkout (an installed wheel ships no benchmarks).
        UnknownNameError: If a name of ``only`` is not a benchmark (close matches listed).
    """
    if directory is None:
        directory = checkout_benchmarks()
        if directory is None:
            raise BanditkitError(
                "the benchmarks live in banditkit's repository, not in the installed "
                "package: run `banditkit bench` from a clone of the repository (after "
                "`make setup`), or give --dir a folder of your own benchmark scripts."
            )
    items = sorted(
        p for p in Path(directory).glob("*.py") if not p.name.startswith("_")
    )
    if only:
        known = [i.stem for i in items]
        for name in only:
            if name not in known:
                raise UnknownNameError(
                    f"unknown benchmark {name!r}.{suggest(name, known)} "
                    f"Benchmarks: {', '.join(known) or 'none'}."
                )
        items = [i for i in items if i.stem in only]
    return items


def _load(item: Benchmark) -> Any:
    """The module of a script; that of a package folder is imported by its dotted name."""
    if (item.parent / "__init__.py").is_file():
        parent = str(item.parent.parent)
        if parent not in sys.path:
            sys.path.insert(0, parent)
        return importlib.import_module(f"{item.parent.name}.{item.stem}")
    spec = importlib.util.spec_from_file_location(f"banditkit_bench_{item.stem}", item)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {item}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _finished(path: Path, quick: bool) -> dict[str, Any]:
    """The ``ok`` entries of an earlier ``bench.json`` of the same mode ({} if none)."""
    try:
        document = json.loads(path.read_text())
        entries = document["benchmarks"]
        if document.get("quick") != quick or not isinstance(entries, dict):
            return {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {
        k: v
        for k, v in entries.items()
        if isinstance(v, dict) and v.get("status") == "ok"
    }


def run_benchmarks(
    benchmarks: Sequence[Benchmark],
    out: str | Path,
    *,
    quick: bool = False,
    rerun: bool = False,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run each benchmark's ``main(quick=..., out=DIR/<name>)``; write and return bench.json.

    A benchmark without ``main`` is skipped; one that raises is recorded with its
    traceback. Benchmarks already ``ok`` in ``DIR/bench.json`` (same ``quick``) are kept
    and not run again, unless ``rerun``.

    Raises:
        OutputDirError: If ``out`` cannot be written.
    """
    out = Path(out)
    store = RunStore(out)
    store.prepare(subdirs=False)
    with store.lock():
        earlier = {} if rerun else _finished(out / "bench.json", quick)
        results: dict[str, Any] = {}
        for item in benchmarks:
            name = item.stem
            if name in earlier:
                results[name] = earlier[name]
                if log is not None:
                    log(
                        f"{name}: kept from {out / 'bench.json'} (--rerun computes it again)"
                    )
                continue
            started = time.perf_counter()
            try:
                main_fn = getattr(_load(item), "main", None)
                if main_fn is None:
                    continue
                target = store.subfolder(name)
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
            results[name] = entry
            _write(store, quick, {**earlier, **results})
            if log is not None:
                log(f"{name}: {entry['status']} ({entry['seconds']:.1f} s)")
        document = _write(store, quick, {**earlier, **results})
    return document


def _write(store: RunStore, quick: bool, results: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        json.dumps({"quick": quick, "benchmarks": results}, default=str)
    )
    store.write_json("bench.json", document)
    return document
