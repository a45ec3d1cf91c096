"""Tasks: the runs to compute, the seeds of one configuration grouped where they batch.

A task is one run (:class:`~banditkit.experiments.config.resolved.RunSpec`) or a
:class:`SeedGroup`: the seeds of one configuration (same environment, policy, parameters and
horizon) computed as one stacked computation, where the policy offers a batched counterpart
(``core.members``; docs/experiments.md, "Seed batching"); a policy class may stack runs of
several configurations too (``Policy.stack_key``: the pair rules of one NVLDB network). A
backend computes either kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from banditkit.core import ENVIRONMENTS, make_policy
from banditkit.core.members import stack
from banditkit.core.resume import Resumable
from banditkit.envs.replay import ReplayEnv
from banditkit.experiments.config.resolved import RunSpec

__all__ = ["BATCH_SEEDS", "SeedGroup", "Task", "group_seeds", "specs_of", "task_cost"]

#: Values of the ``batch_seeds`` option (docs/experiments.md, "Seed batching").
BATCH_SEEDS = ("auto", "on", "off")


@dataclass(frozen=True)
class SeedGroup:
    """Runs computed as one batch (``compute.execute``).

    The seeds of a configuration, or configurations a policy class stacks together
    (``Policy.stack_key``).
    """

    specs: tuple[RunSpec, ...]

    @property
    def kind(self) -> str:
        """The group's own kind for its cost: its configuration and its size."""
        return json.dumps(["seed-group", len(self.specs), self.specs[0].kind])


def _stack_key(spec: RunSpec, checkpointed: bool = False) -> str | None:
    """The batch ``spec`` can join, or None when its policy does not stack.

    ``checkpointed``: only a stack that can be checkpointed and resumed
    (``core.resume.Resumable``); the others' runs keep their own checkpoints.

    Runs with one key share the environment's configuration and the horizon, and their
    policies a ``Policy.stack_key`` (seeds aside, and what the class stacks together:
    NVLDB's pair rules at one network). Only on environments that accept every round
    (not replay environments).
    """
    try:
        env_cls = ENVIRONMENTS.get(spec.env_name)
        family = getattr(env_cls, "family", None)
        if family not in ("contextual", "dueling", "assortment") or (
            isinstance(env_cls, type) and issubclass(env_cls, ReplayEnv)
        ):
            return None
        members = [
            make_policy(spec.policy_name, **spec.policy_params, seed=s) for s in (0, 1)
        ]
        batch = stack(members)
        if batch is None or (checkpointed and not isinstance(batch, Resumable)):
            return None
        return json.dumps(
            [spec.env_name, spec.env_params, spec.horizon, members[0].stack_key()],
            sort_keys=True,
            default=str,
        )
    except Exception:  # the run itself will report the error
        return None


def group_seeds(
    specs: list[RunSpec],
    batch_seeds: str = "auto",
    jobs: int = 1,
    *,
    checkpointed: bool = False,
) -> list[RunSpec | SeedGroup]:
    """The tasks for ``specs``: runs that can share a batch as ``SeedGroup``s.

    "off" keeps every run on its own. "on" and "auto" group the runs whose policy offers
    a stacked play (``core.members.stack``) by their batch (:func:`_stack_key`): the
    seeds of one configuration, and the configurations a policy class stacks together
    (the pair rules of one NVLDB network); other runs stay single. "auto" also splits a
    group into up to ``jobs`` parts when there are fewer tasks than workers (each part
    keeps at least two runs), so that batching does not leave workers idle; "on" keeps
    one group per batch. ``checkpointed`` (runs checkpointed every N rounds): only the
    batches that are checkpointed as one (``compute.execute.compute_seed_group``).

    Raises:
        ValueError: For an unknown ``batch_seeds``.
    """
    if batch_seeds not in BATCH_SEEDS:
        raise ValueError(
            f"batch_seeds must be one of {', '.join(BATCH_SEEDS)}; got {batch_seeds!r}."
        )
    if batch_seeds == "off":
        return list(specs)
    keys: dict[str, str | None] = {}  # by configuration: one policy built per kind
    for spec in specs:
        if spec.kind not in keys:
            keys[spec.kind] = _stack_key(spec, checkpointed)
    groups: dict[str, list[RunSpec]] = {}
    for spec in specs:
        key = keys[spec.kind]
        if key is not None:
            groups.setdefault(key, []).append(spec)
    batched = {key for key, group in groups.items() if len(group) > 1}
    n_tasks = len(batched) + sum(keys[s.kind] not in batched for s in specs)
    tasks: list[RunSpec | SeedGroup] = []
    done: set[str] = set()
    for spec in specs:
        key = keys[spec.kind]
        if key not in batched:
            tasks.append(spec)
            continue
        assert key is not None
        if key in done:
            continue
        done.add(key)
        group = groups[key]
        parts = 1
        if batch_seeds == "auto" and n_tasks < jobs:
            parts = max(1, min(len(group) // 2, jobs - n_tasks + 1))
            n_tasks += parts - 1
        size = -(-len(group) // parts)
        for i in range(0, len(group), size):
            chunk = tuple(group[i : i + size])
            tasks.append(SeedGroup(chunk) if len(chunk) > 1 else chunk[0])
    return tasks


Task = RunSpec | SeedGroup
"""What a backend computes: one run or a group of seeds."""


def specs_of(task: Task) -> tuple[RunSpec, ...]:
    """The runs of a task."""
    return task.specs if isinstance(task, SeedGroup) else (task,)


def task_cost(task: Task) -> int:
    """A task's cost before any is measured: the rounds of its runs (for the order)."""
    return sum(spec.horizon for spec in specs_of(task))
