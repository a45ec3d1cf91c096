"""The plan stage: what this call computes, and how many runs go side by side.

:func:`make_plan` takes the resolved experiment (the config stage's result) and what the
output directory already holds: every distinct run of the experiment (two labels with
identical settings share a run), those not finished yet, and the tasks computing them (the
seeds of one configuration grouped where they batch, ``plan.tasks``), with the backend that
``"auto"`` stands for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from banditkit.experiments.config.resolved import ResolvedExperiment, RunSpec
from banditkit.experiments.plan.tasks import Task, group_seeds

__all__ = ["Plan", "make_plan"]


@dataclass(frozen=True)
class Plan:
    """What to compute.

    Attributes:
        resolved: The experiment.
        runs: Its distinct runs, in config order.
        todo: The runs not finished yet.
        tasks: ``todo`` as tasks: runs, and groups of seeds computed as one batch.
        backend: Where they are computed: "serial", "process" or "ray".
        workers: Runs computed side by side (1 for "serial").
    """

    resolved: ResolvedExperiment
    runs: tuple[RunSpec, ...]
    todo: tuple[RunSpec, ...]
    tasks: tuple[Task, ...]
    backend: str
    workers: int

    @property
    def skipped(self) -> int:
        """Runs found finished, not computed again."""
        return len(self.runs) - len(self.todo)


def make_plan(
    resolved: ResolvedExperiment,
    finished: Callable[[str], bool],
    *,
    backend: str = "auto",
    jobs: int = 1,
    batch_seeds: str = "auto",
) -> Plan:
    """The plan of ``resolved``, given which run ids are ``finished``.

    ``backend="auto"`` is "process" when ``jobs`` > 1 and more than one run is left, else
    "serial". A config with ``checkpoint_every`` batches only the runs whose batch is
    checkpointed as one (``plan.tasks.group_seeds``, ``checkpointed``); every other run
    is computed, and checkpointed, on its own.

    Example:
        >>> from banditkit.experiments.config.resolve import resolve
        >>> r = resolve({"name": "x", "horizon": 5, "seeds": 2,
        ...              "env": {"name": "linear", "d": 3}, "policies": [{"name": "random"}]})
        >>> plan = make_plan(r, lambda run_id: False, jobs=4)
        >>> len(plan.runs), len(plan.tasks), plan.backend, plan.workers
        (2, 2, 'process', 4)
    """
    first: dict[str, RunSpec] = {}
    for spec in resolved.runs():
        first.setdefault(spec.id, spec)  # labels with identical settings share a run
    runs = tuple(first.values())
    todo = tuple(spec for spec in runs if not finished(spec.id))
    if backend == "auto":
        backend = "process" if jobs > 1 and len(todo) > 1 else "serial"
    workers = 1 if backend == "serial" else jobs
    checkpointed = resolved.config.checkpoint_every is not None
    # checkpointed runs batch only where the batch is checkpointed as one
    tasks = tuple(
        group_seeds(list(todo), batch_seeds, workers, checkpointed=checkpointed)
    )
    return Plan(resolved, runs, todo, tasks, backend, workers)
