"""What banditkit records about a dataset: ``DatasetInfo`` and its files, ``DataFile``.

The entries themselves (official homes, file names, download sources and checksums) are the
table of ``banditkit.datasets.registry``; its module docstring says which checksum a file
may match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DataFile", "DatasetInfo"]


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset.

    Args:
        name: Path relative to the dataset's directory (may contain "/").
        size: Size in bytes of the reference copy (None: unknown).
        sha256: sha256 of the reference copy.
        text_sha256: sha256 of the whitespace-normalised text (see the module docstring).
        content_sha256: sha256 of the gunzipped content of a ``.gz`` file.
        git_blob: git blob id (sha1 of ``b"blob <size>" + NUL + content``).
        urls: Where to download it from, tried in order.
        member: The member to extract when the URL is a zip or tar archive.
        compression: "Z" when the URL serves the file compressed with Unix ``compress``.
        optional: A description file: never needed to load, never downloaded automatically.
        group: Which variant of the dataset it belongs to (Covertype: "full-gz", "full-raw",
            "small", "first15120"; OBD: "random/all", ...; others: "data").
    """

    name: str
    size: int | None = None
    sha256: str | None = None
    text_sha256: str | None = None
    content_sha256: str | None = None
    git_blob: str | None = None
    urls: tuple[str, ...] = ()
    member: str | None = None
    compression: str | None = None
    optional: bool = False
    group: str = "data"

    @property
    def has_reference(self) -> bool:
        """Whether any checksum is known for this file."""
        return any((self.sha256, self.text_sha256, self.content_sha256, self.git_blob))


@dataclass(frozen=True)
class DatasetInfo:
    """What banditkit knows about one dataset.

    Attributes:
        name: Registry name (docs/datasets.md section 3).
        title: Human-readable name.
        directory: Sub-directory of the data home holding its files ("" for embedded data).
        home: The official home page.
        licence: Licence as stated by the source.
        kind: "classification" (a labelled table) or "logged-bandit" (OBD).
        files: Every known file.
        rows, features, classes: The counts of the reference copy (docs/datasets.md) for the
            default options (features = raw attributes before any one-hot expansion; for obd:
            rows of the random/all sample, its CSV columns with the unnamed index, and items).
        citation: What to cite.
        notes: Anything a user must know (subsets, substitutions).
    """

    name: str
    title: str
    directory: str
    home: str
    licence: str
    kind: str
    files: tuple[DataFile, ...]
    rows: int
    features: int
    classes: int
    citation: str = ""
    notes: str = ""
    groups: tuple[str, ...] = field(default=("data",))

    def files_in(self, group: str, *, optional: bool = False) -> tuple[DataFile, ...]:
        """The files of one group (description files only when ``optional``)."""
        return tuple(
            f for f in self.files if f.group == group and (optional or not f.optional)
        )

    def file(self, name: str) -> DataFile:
        """The file called ``name``."""
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(f"dataset {self.name!r} has no file {name!r}.")
