"""``banditkit datasets fetch`` and the up-front dataset check, against a local file:// mirror."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.datasets import (
    ChecksumError,
    DatasetNotFoundError,
    MissingDatasetsError,
    dataset_info,
    fetch,
    missing_datasets,
    require_datasets,
)
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.papers import paper_configs, paper_dir
from banditkit.experiments.config.resolve import config_datasets
from tests.datasets._data import require_reference_data

runner = CliRunner()


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    """A mirror holding banknote only, copied from the reference datasets."""
    ref = require_reference_data("banknote")
    folder = tmp_path / "mirror"
    shutil.copytree(ref / "banknote", folder / "banknote")
    return folder


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("BANDITKIT_DATA", str(folder))
    monkeypatch.delenv("BANDITKIT_MIRROR", raising=False)
    return folder


def test_fetch_places_verified_files_and_skips_them_next_time(
    mirror: Path, home: Path
) -> None:
    lines: list[str] = []
    paths = fetch("banknote", mirror=mirror.as_uri(), echo=lines.append)
    target = home / "banknote" / "data_banknote_authentication.txt"
    assert paths == [target]
    assert target.read_bytes() == (mirror / target.relative_to(home)).read_bytes()
    assert lines == ["banknote/data_banknote_authentication.txt  downloaded"]
    assert missing_datasets(["banknote"]) == []
    assert list(target.parent.iterdir()) == [target]  # no partial file left

    lines.clear()
    fetch(["banknote"], mirror=mirror.as_uri(), echo=lines.append)
    assert lines == ["banknote/data_banknote_authentication.txt  ok (already present)"]


def test_the_mirror_comes_from_the_environment(
    mirror: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BANDITKIT_MIRROR", mirror.as_uri())
    fetch("banknote")
    assert (home / "banknote" / "data_banknote_authentication.txt").is_file()


def test_a_corrupted_mirror_file_is_rejected_and_nothing_is_left(
    mirror: Path, home: Path
) -> None:
    source = mirror / "banknote" / "data_banknote_authentication.txt"
    source.write_bytes(source.read_bytes()[:-10] + b"9999999999")
    expected = dataset_info("banknote").files[0].sha256
    assert expected is not None
    with pytest.raises(ChecksumError) as info:
        fetch("banknote", mirror=mirror.as_uri())
    message = str(info.value)
    assert "data_banknote_authentication.txt" in message and expected in message
    assert "got" in message
    assert [p for p in home.rglob("*") if p.is_file()] == []  # the download was deleted


def test_fetch_rejects_unknown_names_before_downloading(home: Path) -> None:
    with pytest.raises(ValueError, match="mushrom"):
        fetch(["banknote", "mushrom"], mirror="file:///nonexistent")
    assert not any(home.iterdir())


def test_cli_fetch_all_with_an_incomplete_mirror_names_what_failed(
    mirror: Path, home: Path
) -> None:
    result = runner.invoke(
        app, ["datasets", "fetch", "--all", "--mirror", mirror.as_uri()]
    )
    assert result.exit_code == 2
    assert "banknote/data_banknote_authentication.txt  downloaded" in result.output
    assert "could not fetch adult, covertype" in result.output
    assert "not in the mirror" in result.output
    assert "Traceback" not in result.output
    assert (home / "banknote" / "data_banknote_authentication.txt").is_file()


def test_cli_fetch_needs_names_or_all(home: Path) -> None:
    result = runner.invoke(app, ["datasets", "fetch"])
    assert result.exit_code == 2 and "--all" in result.output
    result = runner.invoke(app, ["datasets", "fetch", "banknot"])
    assert result.exit_code == 2 and "unknown dataset 'banknot'" in result.output


def test_require_datasets_lists_every_missing_one(home: Path) -> None:
    with pytest.raises(MissingDatasetsError) as info:
        require_datasets(["magic", "digits", "mnist", "magic"])
    assert isinstance(info.value, DatasetNotFoundError)
    assert info.value.names == ["magic", "mnist"]  # digits is embedded
    assert "banditkit datasets fetch magic mnist" in str(info.value)


def test_every_dataset_of_the_logistic_paper_is_found() -> None:
    needed = {
        n
        for path in paper_configs(paper_dir("logistic"))
        for n in config_datasets(load_config(path))
    }
    assert needed == {
        "banknote",
        "magic",
        "mnist",
        "mushroom",
        "phoneme",
        "shuttle",
        "obd",
    }


def test_reproduce_with_an_empty_data_home_fails_fast_naming_everything(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "BANDITKIT_DATA": str(tmp_path / "empty"),
        "BANDITKIT_OFFLINE": "0",
    }
    env.pop("BANDITKIT_MIRROR", None)
    (tmp_path / "empty").mkdir()
    command = [sys.executable, "-m", "banditkit", "reproduce", "logistic", "--quick"]
    start = time.perf_counter()
    proc = subprocess.run(
        [*command, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 2, proc.stderr
    assert elapsed < 30, f"took {elapsed:.1f} s"
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output
    for name in ("mnist", "mushroom", "shuttle", "magic", "banknote", "phoneme", "obd"):
        assert name in output
    assert (
        "banditkit datasets fetch mnist mushroom shuttle magic banknote phoneme obd"
        in output
    )
    assert not (tmp_path / "out").exists()
