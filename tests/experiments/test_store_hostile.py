"""A hostile output directory: planted links, directories in a file's place, a full disk,
forged or swapped run files, another experiment's results. Nothing is written outside
``--out``, no link is followed, and each case is a one-line exit 2 or a damaged run that
is computed again (docs/reliability.md, The store)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.experiments.store import store as store_module
from banditkit.experiments.store.store import (
    CorruptFileError,
    OutputDirError,
    RunStore,
    read_json_object,
)
from banditkit.experiments.store.tables import COLUMNS
from tests.experiments.helpers import HOSTILE, tiny

runner = CliRunner()


SMALL = tiny(
    horizon=10,
    seeds=1,
    envs=[{"name": "linear", "d": 3, "n_arms": 3}],
    policies=[{"name": "random"}],
)


def run(tmp_path: Path, out: Path, cfg: dict[str, Any] = SMALL) -> Any:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return runner.invoke(
        app,
        ["run", str(config), "--out", str(out), "--backend", "serial"],
        catch_exceptions=False,
    )


def assert_refused(result: Any, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder outside ``--out`` holding one file: nothing may change in it."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "victim.txt").write_text("precious\n")
    return folder


def untouched(victim: Path) -> bool:
    return [p.name for p in victim.iterdir()] == ["victim.txt"] and (
        victim / "victim.txt"
    ).read_text() == "precious\n"


# --- links and other things planted in --out --------------------------------------


def test_a_lock_file_linked_to_a_victim_is_refused_not_truncated(tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".banditkit.lock").symlink_to(victim / "victim.txt")
    assert_refused(run(tmp_path, out), ".banditkit.lock", "symbolic link")
    assert untouched(victim)


@pytest.mark.parametrize("folder", ["runs", "figures"])
def test_a_linked_runs_or_figures_folder_is_refused(tmp_path, victim, folder):
    out = tmp_path / "out"
    out.mkdir()
    (out / folder).symlink_to(victim, target_is_directory=True)
    assert_refused(run(tmp_path, out), folder, "symbolic link")
    assert untouched(victim)


def test_a_linked_or_directory_run_file(tmp_path, victim):
    out = tmp_path / "out"
    assert run(tmp_path, out).exit_code == 0
    meta = next((out / "runs").glob("*[!r].json"))
    table = meta.with_suffix(".parquet")
    table.unlink()
    table.symlink_to(victim / "victim.txt")  # damage: the run is computed again
    assert run(tmp_path, out).exit_code == 0
    assert untouched(victim)
    assert table.is_file() and not table.is_symlink()
    meta.unlink()
    meta.mkdir()  # neither readable nor replaceable: refused before computing
    assert_refused(run(tmp_path, out), meta.name, "not a file")


def test_a_full_disk_is_one_line(tmp_path, monkeypatch):
    def full(path: Any, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store_module, "atomic_write_bytes", full)
    assert_refused(run(tmp_path, tmp_path / "out"), "No space left on device")


def test_writes_through_a_folder_linked_after_prepare_are_refused(tmp_path, victim):
    store = RunStore(tmp_path / "out")
    store.prepare()
    store.runs_dir.rmdir()
    store.runs_dir.symlink_to(victim, target_is_directory=True)
    columns = {name: np.arange(1, 4) for name in COLUMNS}
    with pytest.raises(OutputDirError, match="outside the output directory"):
        store.write_run("abc", columns, {"id": "abc"})
    assert untouched(victim)


@pytest.mark.parametrize("name", ["..", "../x", "/tmp/x", "a/b", ".hidden", "x\n", ""])
def test_subfolders_are_ids(tmp_path, name):
    with pytest.raises(OutputDirError, match="expected an id"):
        RunStore(tmp_path).subfolder(name)


def test_a_linked_figure_folder_of_a_reproduction_is_refused(tmp_path, victim):
    store = RunStore(tmp_path / "out")
    store.prepare(subdirs=False)
    (store.root / "fig1").symlink_to(victim, target_is_directory=True)
    with pytest.raises(OutputDirError, match="symbolic link"):
        store.subfolder("fig1")
    assert store.subfolder("fig2").is_dir()


# --- another experiment's results, forged and swapped run files ---------------------


def test_another_experiment_on_the_same_out_is_refused(tmp_path):
    out = tmp_path / "out"
    assert run(tmp_path, out).exit_code == 0
    before = (out / "summary.json").read_bytes()
    assert_refused(run(tmp_path, out, {**SMALL, "name": "other"}), "'tiny'", "--out")
    assert (out / "summary.json").read_bytes() == before
    assert run(tmp_path, out, {**SMALL, "seeds": 2}).exit_code == 0  # same experiment


def _two_runs(tmp_path: Path) -> tuple[RunStore, list[Path]]:
    out = tmp_path / "out"
    assert run(tmp_path, out, {**SMALL, "seeds": 2}).exit_code == 0
    store = RunStore(out)
    metas = sorted(p for p in store.runs_dir.glob("*.json") if "error" not in p.name)
    assert len(metas) == 2
    return store, metas


def test_swapped_tables_are_found_out_with_or_without_a_digest(tmp_path):
    store, (a, b) = _two_runs(tmp_path)
    ta, tb = a.with_suffix(".parquet"), b.with_suffix(".parquet")
    swapped = tb.read_bytes()
    tb.write_bytes(ta.read_bytes())
    ta.write_bytes(swapped)
    with pytest.raises(CorruptFileError, match="SHA-256"):
        store.check_run(a.stem)
    for meta in (a, b):  # a run written before the digest existed
        doc = json.loads(meta.read_text())
        del doc["table_sha256"]
        meta.write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match="another run"):
        store.check_run(a.stem)


def test_metadata_of_another_run_is_found_out(tmp_path):
    store, (a, b) = _two_runs(tmp_path)
    doc = json.loads(b.read_text())
    doc["id"] = a.stem  # b's settings under a's name
    a.write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match="records the settings of run"):
        store.check_run(a.stem)
    assert not store.is_finished(a.stem)


def test_deeply_nested_json_is_damage_not_a_recursion_error(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CorruptFileError, match=r"nested too deep|not valid JSON"):
        read_json_object(path)


# --- hypothesis: any bytes, any shape in a run's place ------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one finished run (its directory and run id)."""
    root = tmp_path_factory.mktemp("finished")
    assert run(root, root / "out").exit_code == 0
    meta = next((root / "out" / "runs").glob("*[!r].json"))
    return root / "out", meta.stem


_shapes = st.sampled_from(["file", "missing", "directory", "link-in", "link-out"])


@HOSTILE
@given(
    meta_bytes=st.binary(max_size=300) | st.just(b'{"id": 1}'),
    table_cut=st.integers(0, 2000),
    meta_shape=_shapes,
    table_shape=_shapes,
)
def test_damaged_run_files_are_not_finished_and_never_followed(
    tmp_path, finished, meta_bytes, table_cut, meta_shape, table_shape
):
    source, run_id = finished
    store = RunStore(tmp_path / "copy")
    store.prepare()
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"outside")
    for path, data, shape in (
        (store.meta_path(run_id), meta_bytes, meta_shape),
        (
            store.table_path(run_id),
            (source / "runs" / f"{run_id}.parquet").read_bytes()[:table_cut],
            table_shape,
        ),
    ):
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        elif path.exists() or path.is_symlink():
            path.unlink()
        if shape == "file":
            path.write_bytes(data)
        elif shape == "directory":
            path.mkdir()
        elif shape == "link-in":
            (path.parent / "real").write_bytes(data)
            path.symlink_to(path.parent / "real")
        elif shape == "link-out":
            path.symlink_to(outside)
    assert store.is_finished(run_id) is False
    with pytest.raises((CorruptFileError, FileNotFoundError)):
        store.check_run(run_id)
    assert outside.read_bytes() == b"outside"
