"""The dataset registry: official homes, file names, download sources and checksums.

Every file a loader reads is listed here with the checksums it must match. A file is accepted
when **any** of its references matches:

    sha256          the bytes exactly as in the reference copy (docs/datasets.md section 2);
    text_sha256     the text after normalising line endings and runs of blanks (each line's
                    fields joined by one space, empty lines dropped), so that a copy saved with
                    CRLF instead of LF, or tabs instead of spaces, is still recognised;
    content_sha256  the decompressed bytes of a ``.gz`` file (Fashion-MNIST: the Debian copy is
                    re-gzipped, so only the content matches upstream);
    git_blob        the git blob id (``git hash-object FILE``), the only published reference for
                    the complete Covertype file.

A file with no reference at all (the complete Open Bandit Dataset) is reported as unverified.

The table itself is data: ``registry.json`` beside this module, a list of datasets whose keys
are the fields of :class:`DatasetInfo` and, under ``files``, of :class:`DataFile` (a field
left out takes its default). Adding a dataset is adding an entry there (and a loader).

The reference layout is ``<data home>/<directory>/<file>`` (docs/datasets.md section 1).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from banditkit.core.validation import check_choice
from banditkit.datasets.entries import DataFile, DatasetInfo

__all__ = ["DATASETS", "DataFile", "DatasetInfo", "dataset_info"]


def _entry(fields: dict[str, Any]) -> DatasetInfo:
    """One dataset of the table, its lists as the tuples of the records."""
    files = tuple(
        DataFile(**{**f, "urls": tuple(f.get("urls", ()))}) for f in fields["files"]
    )
    groups = tuple(fields.get("groups", ("data",)))
    return DatasetInfo(**{**fields, "files": files, "groups": groups})


def _table() -> dict[str, DatasetInfo]:
    text = (
        resources.files("banditkit.datasets")
        .joinpath("registry.json")
        .read_text("utf-8")
    )
    return {info.name: info for info in map(_entry, json.loads(text))}


DATASETS: dict[str, DatasetInfo] = _table()


def dataset_info(name: str) -> DatasetInfo:
    """The registry entry of dataset ``name``.

    Raises:
        ValueError: For an unknown name (with close matches).

    Example:
        >>> dataset_info("magic").classes
        2
    """
    check_choice("dataset", name, list(DATASETS))
    return DATASETS[name]
