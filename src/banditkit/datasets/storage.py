"""Where dataset files live, how they are checked, and how missing ones are fetched.

data home   $BANDITKIT_DATA when set, else $XDG_CACHE_HOME/banditkit (default
            ~/.cache/banditkit); files sit at <data home>/<dataset directory>/<file>,
            the layout of the reference copy of the datasets (docs/datasets.md).
checksums   every file is compared with the references of ``registry`` before it is read;
            a mismatch raises :class:`ChecksumError` and the file is never used.
download    a missing file is fetched from its official home (urllib, with a progress bar),
            checked, and only then moved into place. ``BANDITKIT_OFFLINE=1`` or
            ``download=False`` turns downloading off; a missing file then raises
            :class:`DatasetNotFoundError` saying which file to put where.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
import urllib.error
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from banditkit.core.errors import DatasetError
from banditkit.core.files import atomic_write_bytes
from banditkit.datasets.download import download_file, unlzw
from banditkit.datasets.download import extract_member as _extract_member
from banditkit.datasets.download import fetch_bytes as _fetch_bytes
from banditkit.datasets.registry import DATASETS, DataFile, DatasetInfo, dataset_info

__all__ = [
    "ChecksumError",
    "DatasetNotFoundError",
    "FileStatus",
    "check_file",
    "data_home",
    "dataset_path",
    "dataset_status",
    "download_file",
    "fetch_dataset",
    "file_digests",
    "require_files",
    "unlzw",
    "verify_dataset",
]

ENV_DATA = "BANDITKIT_DATA"
ENV_OFFLINE = "BANDITKIT_OFFLINE"
_CHUNK = 1 << 20


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """A dataset file is absent and could not be downloaded."""


class ChecksumError(DatasetError, ValueError):
    """A dataset file does not match any of its reference checksums."""


# ---------------------------------------------------------------------------- locations
def data_home(root: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding dataset files.

    Args:
        root: An explicit directory; wins over everything else.

    Returns:
        ``root`` if given, else ``$BANDITKIT_DATA`` if set, else ``$XDG_CACHE_HOME/banditkit``
        (``~/.cache/banditkit`` when ``XDG_CACHE_HOME`` is unset). It need not exist yet.

    Example:
        >>> data_home("/tmp/my-data").as_posix()
        '/tmp/my-data'
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(ENV_DATA)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache).expanduser() / "banditkit"


def dataset_path(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The directory where the files of dataset ``name`` are read from (and downloaded to).

    This is what ``banditkit datasets path NAME`` prints. ``digits`` is embedded in
    scikit-learn and has no directory of its own: the data home is returned.

    Example:
        >>> dataset_path("fashion-mnist", root="/data").as_posix()
        '/data/fashion_mnist'
    """
    info = dataset_info(name)
    home = data_home(root)
    return home / info.directory if info.directory else home


def downloads_allowed(download: bool = True) -> bool:
    """Whether a missing file may be downloaded (``download`` and not ``BANDITKIT_OFFLINE``)."""
    flag = os.environ.get(ENV_OFFLINE, "").strip().lower()
    return download and flag in ("", "0", "false", "no")


# ---------------------------------------------------------------------------- checksums
def _normalised_text(data: bytes) -> bytes:
    return b"\n".join(
        b" ".join(line.split()) for line in data.splitlines() if line.strip()
    )


def file_digests(path: str | os.PathLike[str], spec: DataFile) -> dict[str, str]:
    r"""The digests of ``path`` that ``spec`` has references for (kind -> hex digest).

    Example:
        >>> import tempfile, os
        >>> folder = tempfile.mkdtemp()
        >>> p, q = os.path.join(folder, "crlf.txt"), os.path.join(folder, "lf.txt")
        >>> _ = open(p, "wb").write(b"1, 2\r\n"), open(q, "wb").write(b"1,  2\n")
        >>> spec = DataFile("f.txt", text_sha256="x")
        >>> file_digests(p, spec) == file_digests(q, spec)
        True
    """
    path = Path(path)
    out: dict[str, str] = {}
    if spec.sha256 or spec.git_blob:
        sha, blob = hashlib.sha256(), hashlib.sha1()
        blob.update(b"blob %d\0" % path.stat().st_size)
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                sha.update(chunk)
                blob.update(chunk)
        if spec.sha256:
            out["sha256"] = sha.hexdigest()
        if spec.git_blob:
            out["git_blob"] = blob.hexdigest()
    if spec.text_sha256:
        out["text_sha256"] = hashlib.sha256(
            _normalised_text(path.read_bytes())
        ).hexdigest()
    if spec.content_sha256:
        content = hashlib.sha256()
        try:
            with gzip.open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(_CHUNK), b""):
                    content.update(chunk)
            out["content_sha256"] = content.hexdigest()
        except (OSError, EOFError):
            out["content_sha256"] = "<not a valid gzip file>"
    return out


_VERIFIED: dict[tuple[str, int, int, str], bool] = {}


def check_file(path: str | os.PathLike[str], spec: DataFile) -> bool | None:
    """Compare a file with the references of ``spec``.

    Results are cached per (path, size, mtime), so a file is hashed once per process.

    Returns:
        True if a reference matches, False if none does, None if ``spec`` has no reference
        (the file cannot be verified).
    """
    if not spec.has_reference:
        return None
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, spec.name)
    if key not in _VERIFIED:
        digests = file_digests(path, spec)
        refs = {
            "sha256": spec.sha256,
            "text_sha256": spec.text_sha256,
            "content_sha256": spec.content_sha256,
            "git_blob": spec.git_blob,
        }
        _VERIFIED[key] = any(
            refs[k] is not None and refs[k] == v for k, v in digests.items()
        )
    return _VERIFIED[key]


def _references(spec: DataFile) -> str:
    parts = [
        f"{kind} {value}"
        for kind, value in (
            ("sha256", spec.sha256),
            ("sha256 of the whitespace-normalised text", spec.text_sha256),
            ("sha256 of the decompressed content", spec.content_sha256),
            ("git blob id", spec.git_blob),
        )
        if value
    ]
    return " or ".join(parts)


def _raise_mismatch(info: DatasetInfo, spec: DataFile, path: Path) -> None:
    digests = file_digests(path, spec)
    got = ", ".join(f"{k} {v}" for k, v in digests.items())
    raise ChecksumError(
        f"dataset {info.name!r}: {path} does not match its reference checksum "
        f"(expected {_references(spec)}; got {got}). The file is corrupted or is not the "
        "reference copy; it was not used. Delete it to download a fresh copy, or replace it "
        "with the original file (see docs/datasets.md)."
    )


# ---------------------------------------------------------------------------- status
@dataclass(frozen=True)
class FileStatus:
    """The state of one dataset file.

    Attributes:
        dataset: The dataset's registry name.
        name: The file's name relative to the dataset directory.
        path: Where it is expected.
        present: Whether it exists.
        verified: True (matches a reference), False (mismatch), None (absent, not checked,
            or no reference exists).
        optional: A description file, not needed to load the data.
        group: The dataset variant it belongs to.
    """

    dataset: str
    name: str
    path: Path
    present: bool
    verified: bool | None
    optional: bool
    group: str

    @property
    def state(self) -> str:
        """One word: "ok", "MISMATCH", "unverified", "present" (not checked) or "missing"."""
        if not self.present:
            return "missing"
        if self.verified is True:
            return "ok"
        if self.verified is False:
            return "MISMATCH"
        return "present"


def _file_status(
    info: DatasetInfo, spec: DataFile, root: Path, verify: bool
) -> FileStatus:
    path = root / info.directory / spec.name
    present = path.is_file()
    verified = check_file(path, spec) if (present and verify) else None
    return FileStatus(
        info.name, spec.name, path, present, verified, spec.optional, spec.group
    )


def verify_dataset(
    name: str, root: str | os.PathLike[str] | None = None
) -> list[FileStatus]:
    """Check every known file of dataset ``name`` that is present.

    This is what ``banditkit datasets verify [NAME]`` reports. Missing files are listed with
    ``present=False``; a present file with no published reference has ``verified=None``.

    Returns:
        One :class:`FileStatus` per registered file (empty for the embedded ``digits``).
    """
    info = dataset_info(name)
    home = data_home(root)
    return [_file_status(info, spec, home, verify=True) for spec in info.files]


@dataclass(frozen=True)
class DatasetStatus:
    """A summary of one dataset for ``banditkit datasets list``.

    Attributes:
        name: Registry name.
        title: Human-readable name.
        path: Directory of its files.
        kind: "classification" or "logged-bandit".
        available: Whether some complete variant can be loaded without downloading.
        variants: The variants (file groups) whose required files are all present.
        files_present: Present required files / known required files.
        verified: None when not checked; else whether every present file matches.
        home: The official home page.
    """

    name: str
    title: str
    path: Path
    kind: str
    available: bool
    variants: tuple[str, ...]
    files_present: tuple[int, int]
    verified: bool | None
    home: str


def dataset_status(
    root: str | os.PathLike[str] | None = None, *, verify: bool = False
) -> list[DatasetStatus]:
    """One :class:`DatasetStatus` per registered dataset, in registry order.

    Args:
        root: The data home (default: see :func:`data_home`).
        verify: Also hash every present file (seconds for the image datasets).
    """
    home = data_home(root)
    out = []
    for info in DATASETS.values():
        statuses = [_file_status(info, spec, home, verify) for spec in info.files]
        required = [s for s in statuses if not s.optional]
        variants = tuple(
            g
            for g in info.groups
            if (grp := [s for s in required if s.group == g])
            and all(s.present for s in grp)
        )
        if not info.files:
            variants = ("embedded",)
        checked = [s.verified for s in statuses if s.present and s.verified is not None]
        out.append(
            DatasetStatus(
                name=info.name,
                title=info.title,
                path=dataset_path(info.name, home),
                kind=info.kind,
                available=bool(variants),
                variants=variants,
                files_present=(sum(s.present for s in required), len(required)),
                verified=(all(checked) if checked else None) if verify else None,
                home=info.home,
            )
        )
    return out


# ---------------------------------------------------------------------------- require
def _missing_message(
    info: DatasetInfo, specs: Iterable[DataFile], home: Path, why: str
) -> str:
    lines = [f"dataset {info.name!r} ({info.title}): {why}"]
    for spec in specs:
        where = home / info.directory / spec.name
        source = spec.urls[0] if spec.urls else info.home
        how = f" (member {spec.member} of the archive)" if spec.member else ""
        how += " (Unix-compressed .Z: decompress it)" if spec.compression == "Z" else ""
        lines.append(f"  put {spec.name} at {where}\n    from {source}{how}")
    lines.append(
        f"Official home: {info.home}. Or set {ENV_DATA} to a directory laid out as "
        "<dir>/<dataset>/<file> (see docs/datasets.md)."
    )
    return "\n".join(lines)


def require_files(
    info: DatasetInfo,
    specs: Iterable[DataFile],
    *,
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    verify: bool = True,
) -> dict[str, Path]:
    """Make sure the files ``specs`` of dataset ``info`` are present and verified.

    Missing files are downloaded when allowed (see :func:`downloads_allowed`).

    Returns:
        File name -> path.

    Raises:
        DatasetNotFoundError: A file is missing and cannot be downloaded.
        ChecksumError: A present or downloaded file matches no reference.
    """
    home = data_home(root)
    specs = list(specs)
    missing = [s for s in specs if not (home / info.directory / s.name).is_file()]
    if missing:
        if not downloads_allowed(download):
            raise DatasetNotFoundError(
                _missing_message(
                    info, missing, home, "files are missing (downloads are off)."
                )
            )
        _download_all(info, missing, home)
    paths = {}
    for spec in specs:
        path = home / info.directory / spec.name
        if verify and check_file(path, spec) is False:
            _raise_mismatch(info, spec, path)
        paths[spec.name] = path
    return paths


def fetch_dataset(
    name: str, root: str | os.PathLike[str] | None = None, *, group: str | None = None
) -> list[Path]:
    """Download the missing required files of dataset ``name`` (one variant or all).

    Args:
        name: Registry name.
        root: The data home (default: see :func:`data_home`).
        group: Only this variant (e.g. "random/all" for obd, "full-gz" for covertype); by
            default the first variant of each dataset (the one the loader prefers).

    Returns:
        The paths of the files of that variant, all present and verified.
    """
    info = dataset_info(name)
    group = group or info.groups[0]
    if group not in info.groups:
        raise ValueError(
            f"dataset {name!r} has no variant {group!r}; known: {info.groups}."
        )
    specs = [s for s in info.files_in(group) if s.urls]
    return list(require_files(info, specs, root=root).values())


# ---------------------------------------------------------------------------- download
def _download_all(info: DatasetInfo, specs: list[DataFile], home: Path) -> None:
    unreachable = [s for s in specs if not s.urls]
    if unreachable:
        raise DatasetNotFoundError(
            _missing_message(
                info,
                unreachable,
                home,
                "files are missing and have no download source.",
            )
        )
    archives: dict[str, bytes] = {}
    for spec in specs:
        dest = home / info.directory / spec.name
        errors = []
        for url in spec.urls:
            try:
                if spec.member is not None:
                    if url not in archives:
                        archives[url] = _fetch_bytes(url)
                    data = _extract_member(archives[url], spec.member, url)
                else:
                    data = _fetch_bytes(url)
                if spec.compression == "Z":
                    data = unlzw(data)
            except (
                urllib.error.URLError,
                OSError,
                ValueError,
                KeyError,
                zipfile.BadZipFile,
                tarfile.TarError,
            ) as exc:
                errors.append(f"{url}: {exc}")
                continue
            try:
                _install(data, dest, spec, info)
            except PermissionError as exc:
                raise DatasetNotFoundError(
                    f"dataset {info.name!r}: cannot write {dest} ({exc}). Set "
                    f"{ENV_DATA} to a writable directory, or put the file there yourself."
                ) from None
            break
        else:
            raise DatasetNotFoundError(
                _missing_message(
                    info,
                    [spec],
                    home,
                    "could not download a missing file (offline?): "
                    + "; ".join(errors),
                )
            )


def _install(data: bytes, dest: Path, spec: DataFile, info: DatasetInfo) -> None:
    """Write downloaded ``data`` to ``dest`` atomically, only if it matches its checksums."""

    def verify(tmp: Path) -> None:
        if check_file(tmp, spec) is False:
            digests = file_digests(tmp, spec)
            raise ChecksumError(
                f"dataset {info.name!r}: the downloaded {spec.name} does not match its "
                f"reference (expected {_references(spec)}; got {digests}). It was discarded."
            )

    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(dest, data, check=verify)
