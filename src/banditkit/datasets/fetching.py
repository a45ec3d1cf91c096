"""Datasets up front: fetch them explicitly, and check a whole experiment's needs at once.

fetch             ``banditkit datasets fetch NAME... | --all``: downloads every missing file of
                  each dataset's preferred variant into the data home, checks it against the
                  registry's checksums, and only then moves it into place (a mismatch deletes
                  the download and raises :class:`ChecksumError` naming the file and both
                  digests). Files already present and valid are skipped. A mirror (``mirror=``
                  or ``$BANDITKIT_MIRROR``), a base URL laid out like the data home
                  (``<mirror>/<dataset directory>/<file>``, e.g. ``file:///srv/datasets``),
                  replaces every dataset's official source.
require_datasets  raises one :class:`MissingDatasetsError` naming every dataset of a list that
                  has no complete variant in the data home, and the command that fetches them.
"""

from __future__ import annotations

import os
import urllib.error
from collections.abc import Callable, Iterable
from pathlib import Path

from banditkit.datasets.download import fetch_bytes
from banditkit.datasets.registry import DATASETS, DataFile, DatasetInfo, dataset_info
from banditkit.datasets.storage import (
    DatasetNotFoundError,
    _download_all,
    _install,
    check_file,
    data_home,
    dataset_status,
)

__all__ = [
    "ENV_MIRROR",
    "MissingDatasetsError",
    "fetch",
    "fetch_command",
    "missing_datasets",
    "require_datasets",
]

ENV_MIRROR = "BANDITKIT_MIRROR"


class MissingDatasetsError(DatasetNotFoundError):
    """Datasets an experiment needs are not in the data home.

    Attributes:
        names: The missing datasets, in the order they were asked for.
    """

    def __init__(self, names: list[str], home: Path) -> None:
        self.names = list(names)
        super().__init__(
            f"missing dataset{'s' if len(names) > 1 else ''} {', '.join(names)} "
            f"(data home {home}); fetch {'them' if len(names) > 1 else 'it'} with: "
            f"{fetch_command(names)}"
        )


def fetch_command(names: Iterable[str]) -> str:
    """The shell command that downloads ``names``.

    Example:
        >>> fetch_command(["magic", "mnist"])
        'banditkit datasets fetch magic mnist'
    """
    return " ".join(["banditkit datasets fetch", *names])


def missing_datasets(
    names: Iterable[str], root: str | os.PathLike[str] | None = None
) -> list[str]:
    """The datasets of ``names`` with no complete variant in the data home (nothing hashed).

    Unknown names and repeats are dropped; the order of ``names`` is kept.
    """
    wanted = list(dict.fromkeys(n for n in names if n in DATASETS))
    if not wanted:
        return []
    available = {st.name for st in dataset_status(root) if st.available}
    return [n for n in wanted if n not in available]


def require_datasets(
    names: Iterable[str], root: str | os.PathLike[str] | None = None
) -> None:
    """Raise :class:`MissingDatasetsError` naming every dataset of ``names`` that is missing.

    Only looks for files (no download, no checksum): an experiment calls it before its first
    run so that a missing dataset is reported at once, with all the others.
    """
    missing = missing_datasets(names, root)
    if missing:
        raise MissingDatasetsError(missing, data_home(root))


def _mirror_url(mirror: str, info: DatasetInfo, spec: DataFile) -> str:
    parts = [mirror.rstrip("/"), info.directory, spec.name]
    return "/".join(p for p in parts if p)


def _fetch_from_mirror(
    mirror: str, info: DatasetInfo, spec: DataFile, dest: Path
) -> None:
    url = _mirror_url(mirror, info, spec)
    try:
        data = fetch_bytes(url)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DatasetNotFoundError(
            f"dataset {info.name!r}: could not download {spec.name} from {url} "
            f"(offline, or not in the mirror?): {exc}"
        ) from None
    _install(data, dest, spec, info)


def fetch(
    names: str | Iterable[str],
    *,
    root: str | os.PathLike[str] | None = None,
    mirror: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> list[Path]:
    """Download and verify the missing files of datasets ``names`` (preferred variant each).

    Args:
        names: A registry name or several (``list_datasets()`` for all).
        root: The data home (default: see :func:`data_home`).
        mirror: Base URL laid out like the data home that replaces the official sources
            (default ``$BANDITKIT_MIRROR``; unset: the registry's URLs).
        echo: Called with one line per file ("magic/magic04.data  downloaded").

    Returns:
        The paths of every file of the fetched variants, present and verified.

    Raises:
        ValueError: For an unknown dataset name.
        DatasetNotFoundError: A file could not be downloaded (offline, or absent from the
            mirror).
        ChecksumError: A downloaded file matches no reference (it was deleted).

    ``BANDITKIT_OFFLINE`` does not apply: it only turns off the automatic downloads.
    """
    wanted = [names] if isinstance(names, str) else list(names)
    infos = [dataset_info(n) for n in wanted]  # unknown names fail before any download
    mirror = mirror if mirror is not None else os.environ.get(ENV_MIRROR) or None
    home = data_home(root)
    say = echo or (lambda line: None)
    paths: list[Path] = []
    for info in infos:
        if not info.files:
            say(f"{info.name}  embedded (nothing to fetch)")
            continue
        for spec in info.files_in(info.groups[0]):
            dest = home / info.directory / spec.name
            label = f"{info.directory}/{spec.name}"
            if dest.is_file() and check_file(dest, spec) is not False:
                say(f"{label}  ok (already present)")
            else:
                if mirror is not None:
                    _fetch_from_mirror(mirror, info, spec, dest)
                else:
                    _download_all(info, [spec], home)
                say(f"{label}  downloaded")
            paths.append(dest)
    return paths
