"""What each task takes and how it is kept: CPUs, GPU fraction, checkpoints, retries.

A task's resources come from the config's ``resources: {cpus, gpus}`` when it has one, else
from the defaults of its policy's family (:func:`default_resources`): one CPU and no GPU,
and a quarter of a GPU (:data:`GPU_SHARE`) for a neural policy asked to compute on a CUDA
device. A task runs with ``cpus`` BLAS and PyTorch threads on every backend; the Ray
backend also reserves ``cpus`` and ``gpus`` for it on the cluster (``compute.ray``).

Checkpoints (``checkpoint_every`` rounds, ``store.checkpoints``) and retries (a task whose
node died is started again, from its checkpoint, up to ``retries`` times) are settings of
the whole experiment.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from banditkit.experiments.config.resolved import RunSpec
from banditkit.experiments.config.schema import ResourcesSpec
from banditkit.experiments.plan.tasks import Task, specs_of
from banditkit.experiments.store.checkpoints import (
    CheckpointFiles,
    CheckpointSink,
    RunCheckpoints,
)

__all__ = ["GPU_SHARE", "RETRIES", "Resources", "TaskSettings", "default_resources"]

#: The GPU fraction of a neural policy computing on a CUDA device, by default: four runs
#: share a GPU (a run of the papers' networks leaves most of one idle).
GPU_SHARE = 0.25
#: How often, by default, a task whose node or worker died is started again.
RETRIES = 3


@dataclass(frozen=True)
class Resources:
    """CPUs (threads) and GPU fraction of one task."""

    cpus: int = 1
    gpus: float = 0.0


def default_resources(spec: RunSpec) -> Resources:
    """The defaults of the run's family: a GPU share for a policy asking for CUDA.

    Example:
        >>> spec = RunSpec("linear", {}, "neural-ucb", {"device": "cuda:0"}, 0, 10)
        >>> default_resources(spec)
        Resources(cpus=1, gpus=0.25)
    """
    device = spec.policy_params.get("device")
    gpu = isinstance(device, str) and device.startswith("cuda")
    return Resources(cpus=1, gpus=GPU_SHARE if gpu else 0.0)


@dataclass(frozen=True)
class TaskSettings:
    """How the tasks of an experiment are computed (besides where: the backend).

    Attributes:
        resources: The config's ``resources`` (None: :func:`default_resources`).
        checkpoint_every: Rounds between a run's checkpoints (None: none).
        checkpoint_dir: Where the checkpoints go (the store's ``checkpoints/``).
        retries: Restarts of a task whose worker or node died (Ray).
    """

    resources: ResourcesSpec | None = None
    checkpoint_every: int | None = None
    checkpoint_dir: Path | None = None
    retries: int = RETRIES

    def resources_of(self, task: Task) -> Resources:
        """The task's CPUs and GPU fraction (a group: those of its first run)."""
        if self.resources is not None:
            return Resources(self.resources.cpus, float(self.resources.gpus))
        return default_resources(specs_of(task)[0])

    def checkpoints(self, sink: CheckpointSink | None = None) -> RunCheckpoints | None:
        """The runs' checkpointing into ``sink`` (default: the store's files), or None."""
        if self.checkpoint_every is None:
            return None
        if sink is None:
            if self.checkpoint_dir is None:
                return None
            sink = CheckpointFiles(self.checkpoint_dir)
        return RunCheckpoints(self.checkpoint_every, sink)
