"""Run checkpoints: a run's snapshot every N rounds, so that a lost worker costs <= N rounds.

A checkpoint is a state file (``core.statefile``, format ``banditkit-checkpoint``) holding a
:class:`~banditkit.core.resume.Snapshot` of one run (its rounds so far, the policy's and the
environment's ``state_dict``) under a header naming the run's id. The result store keeps
them as ``DIR/checkpoints/<id>.npz``, each written atomically (a temporary file renamed
over the last one), and removes a run's checkpoint once the run is stored.

Where the bytes go is a :class:`CheckpointSink`: :class:`CheckpointFiles` writes the store's
folder directly (this process and the local process pool share its file system); the Ray
backend hands them to an actor on the driver's node that writes the same files
(``compute.ray``). A run that finds its checkpoint resumes from it (``compute.execute``);
a checkpoint that cannot be read (damaged, another run's, another banditkit's layout) is
ignored with a warning and the run starts from round 1.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from banditkit.core.errors import DamagedFileError
from banditkit.core.files import atomic_write_bytes
from banditkit.core.resume import Snapshot
from banditkit.core.statefile import StateFormat, pack_state, read_state
from banditkit.core.validation import check_int

__all__ = [
    "CHECKPOINTS_DIR",
    "CHECKPOINT_FILE",
    "MAX_CHECKPOINT_BYTES",
    "CheckpointFileError",
    "CheckpointFiles",
    "CheckpointSink",
    "RunCheckpoints",
    "decode_snapshot",
    "encode_snapshot",
    "read_checkpoint",
]

_log = logging.getLogger("banditkit")

#: Largest total size, in bytes, of the arrays a checkpoint may declare (16 GiB).
MAX_CHECKPOINT_BYTES = 16 * 2**30
#: The store's folder of checkpoints.
CHECKPOINTS_DIR = "checkpoints"


class CheckpointFileError(DamagedFileError):
    """A run checkpoint cannot be read back (truncated, foreign, newer or edited)."""


CHECKPOINT_FILE = StateFormat(
    "banditkit-checkpoint", 1, "run checkpoint", CheckpointFileError
)


def encode_snapshot(snapshot: Snapshot, run_id: str, family: str) -> bytes:
    """The bytes of the checkpoint file of ``snapshot`` (run ``run_id``)."""
    members = pack_state(snapshot.to_state(family), CHECKPOINT_FILE, run=run_id)
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    return buffer.getvalue()


def decode_snapshot(
    data: bytes,
    *,
    run_id: str,
    runs: int,
    width: int,
    horizon: int,
    family: str,
    path: str | Path = "<checkpoint>",
) -> Snapshot:
    """The snapshot in a checkpoint file's bytes, checked against the run it continues.

    Raises:
        CheckpointFileError: If the file is damaged, of another run, or does not fit it.
    """

    def check(header: dict[str, object]) -> None:
        if header.get("run") != run_id:
            raise CheckpointFileError(
                path,
                f"it is the checkpoint of run {header.get('run')!r}, not {run_id!r}",
            )

    _, state = read_state(
        data, CHECKPOINT_FILE, max_bytes=MAX_CHECKPOINT_BYTES, path=path, check=check
    )
    try:
        return Snapshot.from_state(
            state, runs=runs, width=width, horizon=horizon, family=family
        )
    except (ValueError, TypeError) as exc:
        raise CheckpointFileError(path, f"it does not fit this run ({exc})") from None


@runtime_checkable
class CheckpointSink(Protocol):
    """Where a run's checkpoints go: the latest bytes per run id."""

    def save(self, run_id: str, data: bytes) -> None:
        """Keep ``data`` as the checkpoint of ``run_id`` (replacing the last one)."""
        ...

    def load(self, run_id: str) -> bytes | None:
        """The last checkpoint of ``run_id``, or None."""
        ...

    def drop(self, run_id: str) -> None:
        """Forget the checkpoint of ``run_id`` (a finished seed group's; none: nothing)."""
        ...


@dataclass(frozen=True)
class CheckpointFiles:
    """Checkpoints as files of a folder (``DIR/checkpoints``), each written atomically.

    Picklable: process-pool workers write the folder themselves.

    Example:
        >>> import tempfile
        >>> files = CheckpointFiles(Path(tempfile.mkdtemp()))
        >>> files.save("abc", b"x"); files.load("abc"), files.load("other")
        (b'x', None)
    """

    folder: Path

    def path(self, run_id: str) -> Path:
        """The file of ``run_id``'s checkpoint."""
        return self.folder / f"{run_id}.npz"

    def save(self, run_id: str, data: bytes) -> None:
        """Write the checkpoint atomically (the folder is created if missing)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path(run_id), data)

    def load(self, run_id: str) -> bytes | None:
        """The checkpoint's bytes, or None when there is none."""
        try:
            return self.path(run_id).read_bytes()
        except FileNotFoundError:
            return None

    def drop(self, run_id: str) -> None:
        """Remove the checkpoint of a run that is stored."""
        self.path(run_id).unlink(missing_ok=True)


@dataclass(frozen=True)
class RunCheckpoints:
    """How the runs of a task are checkpointed: every ``every`` rounds, into ``sink``."""

    every: int
    sink: CheckpointSink

    def __post_init__(self) -> None:
        check_int("every", self.every, low=1)


def read_checkpoint(
    checkpoints: RunCheckpoints,
    run_id: str,
    *,
    width: int,
    horizon: int,
    family: str,
    runs: int = 1,
) -> Snapshot | None:
    """The snapshot a run resumes from, or None (none kept, or one that does not fit).

    ``runs`` > 1: the checkpoint of a seed group, its runs in lockstep. A checkpoint
    that cannot be used is logged as a warning and ignored: the run is computed from
    round 1 and its next checkpoint replaces it.
    """
    data = checkpoints.sink.load(run_id)
    if data is None:
        return None
    try:
        return decode_snapshot(
            data,
            run_id=run_id,
            runs=runs,
            width=width,
            horizon=horizon,
            family=family,
            path=f"checkpoint of run {run_id}",
        )
    except CheckpointFileError as exc:
        _log.warning("%s; the run starts from round 1.", exc)
        return None
