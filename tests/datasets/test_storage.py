from __future__ import annotations

import gzip
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from banditkit.datasets import (
    DATASETS,
    ChecksumError,
    DatasetNotFoundError,
    data_home,
    dataset_path,
    dataset_status,
    list_datasets,
    load_dataset,
    storage,
    verify_dataset,
)
from banditkit.datasets.download import download_file, fetch_bytes, unlzw
from banditkit.datasets.registry import DataFile
from tests.datasets._data import require_reference_data

DESIGN_NAMES = {
    "digits", "mushroom", "shuttle", "magic", "adult", "covertype", "mnist",
    "fashion-mnist", "banknote", "phoneme", "obd",
}  # fmt: skip


# ---------------------------------------------------------------------------- registry
def test_registry_holds_the_eleven_datasets_of_the_design() -> None:
    assert set(DATASETS) == DESIGN_NAMES
    assert set(list_datasets()) == DESIGN_NAMES
    assert "obd" not in list_datasets("classification")


@pytest.mark.parametrize("name", sorted(DESIGN_NAMES - {"digits"}))
def test_every_file_has_a_reference_and_every_required_file_a_source(name: str) -> None:
    info = DATASETS[name]
    assert info.home.startswith("http")
    assert info.files
    for f in info.files:
        if name == "covertype" and f.name == "covtype.data":
            assert f.git_blob  # the raw file is only verifiable, not downloadable
            continue
        assert f.has_reference, f.name
        if f.sha256:
            assert len(f.sha256) == 64
        if not f.optional and f.group in (info.groups[0], "data"):
            assert f.urls, f"{name}/{f.name} has no download source"


def test_reference_copy_matches_every_sha256_of_the_registry() -> None:
    """README's table and the registry agree: all present reference files verify."""
    root = require_reference_data()
    for name in sorted(DESIGN_NAMES - {"digits"}):
        for status in verify_dataset(name, root):
            if status.present:
                assert status.verified is True, f"{name}/{status.name}: {status.state}"
                assert status.state == "ok"
            else:  # only the complete covertype file is absent from the reference copy
                assert name == "covertype" and status.group in ("full-gz", "full-raw")


# ---------------------------------------------------------------------------- locations
def test_data_home_prefers_explicit_root_then_env_then_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BANDITKIT_DATA", str(tmp_path / "env"))
    assert data_home(tmp_path / "x") == tmp_path / "x"
    assert data_home() == tmp_path / "env"
    monkeypatch.delenv("BANDITKIT_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert data_home() == tmp_path / "cache" / "banditkit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert data_home() == Path("~/.cache/banditkit").expanduser()


def test_dataset_path_uses_the_reference_layout(tmp_path: Path) -> None:
    assert dataset_path("fashion-mnist", tmp_path) == tmp_path / "fashion_mnist"
    assert dataset_path("obd", tmp_path) == tmp_path / "obd"
    assert dataset_path("digits", tmp_path) == tmp_path


def test_status_lists_every_dataset_with_its_variants() -> None:
    root = require_reference_data()
    status = {s.name: s for s in dataset_status(root)}
    assert set(status) == DESIGN_NAMES
    assert all(s.available for s in status.values())
    assert status["covertype"].variants == ("small", "first15120")
    assert status["mnist"].files_present == (4, 4)
    assert status["digits"].variants == ("embedded",)
    assert status["magic"].verified is None  # not hashed unless asked
    assert {s.name: s.verified for s in dataset_status(root, verify=True)}[
        "magic"
    ] is True


def test_status_of_an_empty_home(tmp_path: Path) -> None:
    status = {s.name: s for s in dataset_status(tmp_path)}
    assert not status["magic"].available
    assert status["magic"].files_present == (0, 1)
    assert status["digits"].available


# ---------------------------------------------------------------------------- checksums
def _copy(name: str, files: list[str], dest_root: Path) -> Path:
    src_root = require_reference_data(DATASETS[name].directory)
    dest = dest_root / DATASETS[name].directory
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_root / DATASETS[name].directory / f, dest / f)
    return dest


def test_a_corrupted_copy_is_rejected_with_a_clear_error(tmp_path: Path) -> None:
    dest = _copy("magic", ["magic04.data"], tmp_path)
    data = bytearray((dest / "magic04.data").read_bytes())
    data[100] = ord("9") if data[100] != ord("9") else ord("8")
    (dest / "magic04.data").write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=r"magic04\.data does not match") as info:
        load_dataset("magic", root=tmp_path)
    assert "e9314b7e" in str(info.value)  # the expected sha256 is named
    assert [s.state for s in verify_dataset("magic", tmp_path)] == [
        "MISMATCH",
        "missing",
    ]


def test_a_truncated_gzip_is_rejected(tmp_path: Path) -> None:
    dest = _copy("fashion-mnist", ["t10k-labels-idx1-ubyte.gz"], tmp_path)
    path = dest / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-50])
    spec = DATASETS["fashion-mnist"].file("t10k-labels-idx1-ubyte.gz")
    assert storage.check_file(path, spec) is False


def test_regzipped_content_and_reformatted_text_are_recognised(tmp_path: Path) -> None:
    """Content checksums accept another gzip of the same bytes, or CRLF -> LF text."""
    dest = _copy("mnist", ["t10k-labels-idx1-ubyte.gz"], tmp_path)
    path = dest / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes()), mtime=0))
    spec = DATASETS["mnist"].file("t10k-labels-idx1-ubyte.gz")
    assert storage.check_file(path, spec) is True
    bank = _copy("banknote", ["data_banknote_authentication.txt"], tmp_path)
    text = bank / "data_banknote_authentication.txt"
    text.write_bytes(text.read_bytes().replace(b"\r\n", b"\n"))
    ds = load_dataset("banknote", root=tmp_path, download=False)
    assert ds.features.shape == (1372, 4)
    assert ds.meta["verified"] is True


def test_unverified_loading_is_explicit(tmp_path: Path) -> None:
    dest = _copy("phoneme", ["phoneme.dat"], tmp_path)
    (dest / "phoneme.dat").write_text(
        (dest / "phoneme.dat").read_text().replace("1.259", "1.258", 1)
    )
    with pytest.raises(ChecksumError):
        load_dataset("phoneme", root=tmp_path, download=False)
    ds = load_dataset("phoneme", root=tmp_path, download=False, verify=False)
    assert ds.meta["verified"] is False


# ---------------------------------------------------------------------------- missing files
def test_offline_error_names_the_file_and_where_to_put_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("shuttle", root=tmp_path, download=False)
    msg = str(info.value)
    assert str(tmp_path / "shuttle" / "shuttle.trn") in msg
    assert str(tmp_path / "shuttle" / "shuttle.tst") in msg
    assert "archive.ics.uci.edu" in msg and "BANDITKIT_DATA" in msg


def test_offline_env_var_disables_downloads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(storage, "_fetch_bytes", no_network)
    monkeypatch.setenv("BANDITKIT_OFFLINE", "1")
    with pytest.raises(DatasetNotFoundError, match="downloads are off"):
        load_dataset("banknote", root=tmp_path)


def test_a_failed_download_gives_the_offline_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def unreachable(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.delenv("BANDITKIT_OFFLINE")
    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(DatasetNotFoundError, match="could not download") as info:
        load_dataset("banknote", root=tmp_path)
    assert "data_banknote_authentication.txt" in str(info.value)
    assert not list(tmp_path.rglob("*.txt"))


def test_download_installs_a_verified_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    src = (
        require_reference_data("banknote")
        / "banknote"
        / "data_banknote_authentication.txt"
    )
    urls: list[str] = []

    def fake_fetch(url: str) -> bytes:
        urls.append(url)
        return src.read_bytes()

    monkeypatch.delenv("BANDITKIT_OFFLINE")
    monkeypatch.setattr(storage, "_fetch_bytes", fake_fetch)
    ds = load_dataset("banknote", root=tmp_path)
    assert ds.features.shape == (1372, 4)
    assert urls == list(DATASETS["banknote"].files[0].urls)
    assert (tmp_path / "banknote" / "data_banknote_authentication.txt").is_file()
    assert not list(tmp_path.rglob("*.part"))


def test_a_download_with_the_wrong_checksum_is_discarded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BANDITKIT_OFFLINE")
    monkeypatch.setattr(storage, "_fetch_bytes", lambda url: b"1,2,3,4,0\n")
    with pytest.raises(ChecksumError, match="discarded"):
        load_dataset("banknote", root=tmp_path)
    assert not list((tmp_path / "banknote").iterdir())


def test_archive_members_and_z_files_are_unpacked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """phoneme comes as a member of KEEL's zip, shuttle.trn as a .Z file."""
    import io
    import zipfile

    ref = require_reference_data("phoneme")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.write(ref / "phoneme" / "phoneme.dat", "phoneme.dat")
    monkeypatch.delenv("BANDITKIT_OFFLINE")
    monkeypatch.setattr(storage, "_fetch_bytes", lambda url: buf.getvalue())
    assert load_dataset("phoneme", root=tmp_path).features.shape == (5404, 5)

    shuttle = require_reference_data("shuttle") / "shuttle"
    served = {
        "shuttle.trn.Z": lzw_compress((shuttle / "shuttle.trn").read_bytes()),
        "shuttle.tst": (shuttle / "shuttle.tst").read_bytes(),
    }
    monkeypatch.setattr(
        storage, "_fetch_bytes", lambda url: served[url.rsplit("/", 1)[1]]
    )
    assert load_dataset("shuttle", root=tmp_path).features.shape == (58000, 9)


# ---------------------------------------------------------------------------- .Z (LZW)
def lzw_compress(
    data: bytes,
    max_bits: int = 16,
    block_mode: bool = True,
    clear_when_full: bool = False,
) -> bytes:
    """A small Unix-compress encoder (ncompress semantics) to test the decoder."""
    out = bytearray([0x1F, 0x9D, max_bits | (0x80 if block_mode else 0)])
    state = {"acc": 0, "nacc": 0, "pos": 0, "group": 0, "n_bits": 9, "clear": False}
    first = 257 if block_mode else 256
    table = {bytes([i]): i for i in range(256)}
    free = [first]

    def put(value: int, width: int) -> None:
        state["acc"] |= value << state["nacc"]
        state["nacc"] += width
        state["pos"] += width
        while state["nacc"] >= 8:
            out.append(state["acc"] & 0xFF)
            state["acc"] >>= 8
            state["nacc"] -= 8

    def output(code: int) -> None:
        n = state["n_bits"]
        put(code, n)
        maxcode = (1 << n) - 1 if n < max_bits else 1 << max_bits
        if state["clear"] or free[0] > maxcode:
            used, group = state["pos"] - state["group"], n * 8
            if used % group:
                put(0, group - used % group)
            state["n_bits"] = 9 if state["clear"] else n + 1
            state["clear"] = False
            state["group"] = state["pos"]

    if not data:
        return bytes(out)
    w = data[:1]
    for c in data[1:]:
        wc = w + bytes([c])
        if wc in table:
            w = wc
            continue
        output(table[w])
        if free[0] < (1 << max_bits):
            table[wc] = free[0]
            free[0] += 1
        elif clear_when_full and block_mode:
            table = {bytes([i]): i for i in range(256)}
            free[0] = first
            state["clear"] = True
            output(256)
        w = bytes([c])
    output(table[w])
    if state["nacc"]:
        out.append(state["acc"] & 0xFF)
    return bytes(out)


@pytest.mark.parametrize(
    ("max_bits", "block_mode", "clear"),
    [(16, True, False), (12, False, False), (10, True, True), (12, True, True)],
)
def test_unlzw_inverts_compress(max_bits: int, block_mode: bool, clear: bool) -> None:
    rng = np.random.default_rng(0)
    words = [b"alpha ", b"beta ", b"gamma\n", b"12 34 56\t", b"\x00\xff"]
    data = b"".join(words[i] for i in rng.integers(len(words), size=4000))
    data += rng.integers(0, 256, size=3000, dtype=np.uint8).tobytes()
    packed = lzw_compress(data, max_bits, block_mode, clear)
    assert unlzw(packed) == data
    if shutil.which("gzip"):  # the encoder itself is checked by an independent decoder
        done = subprocess.run(
            ["gzip", "-dc"], input=packed, capture_output=True, check=True
        )
        assert done.stdout == data


def test_unlzw_rejects_other_data() -> None:
    with pytest.raises(ValueError, match="magic"):
        unlzw(b"PK\x03\x04")


def test_file_without_reference_is_unverified(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("1,2\n")
    assert storage.check_file(path, DataFile("x.csv")) is None
    assert storage.check_file(path, DataFile("x.csv", git_blob="0" * 40)) is False


def test_fetch_reads_a_url_with_a_progress_bar(tmp_path: Path) -> None:
    """A file:// URL exercises urllib and the progress bar without any network."""
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 5000)
    assert fetch_bytes(src.as_uri()) == src.read_bytes()
    dest = download_file(src.as_uri(), tmp_path / "sub" / "copy.bin")
    assert dest.read_bytes() == src.read_bytes()


def test_fetch_dataset_downloads_the_preferred_variant(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ref = require_reference_data("magic") / "magic" / "magic04.data"
    monkeypatch.delenv("BANDITKIT_OFFLINE")
    monkeypatch.setattr(storage, "_fetch_bytes", lambda url: ref.read_bytes())
    assert storage.fetch_dataset("magic", tmp_path) == [
        tmp_path / "magic" / "magic04.data"
    ]
    with pytest.raises(ValueError, match="no variant"):
        storage.fetch_dataset("magic", tmp_path, group="full")
