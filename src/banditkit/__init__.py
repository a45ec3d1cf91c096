"""banditkit: nonlinear contextual bandits, their baselines, environments and experiments.

Example:
    >>> import banditkit as bk
    >>> env = bk.make_env("logistic", h="h1", d=6, n_arms=3)
    >>> policy = bk.make_policy("linucb", nu=0.5, seed=0)
    >>> run = bk.simulate(policy, env, horizon=20, seed=0)
    >>> run.cumulative_regret.shape
    (20,)
"""

from __future__ import annotations

from banditkit import assortment as assortment
from banditkit import envs as envs
from banditkit import errors as errors
from banditkit import ope as ope
from banditkit import policies as policies
from banditkit._version import __version__
from banditkit.core import (
    AssortmentPolicy,
    Context,
    ContextualPolicy,
    DuelingPolicy,
    Environment,
    Policy,
    RunResult,
    Step,
    list_envs,
    list_policies,
    make_env,
    make_policy,
    simulate,
)
from banditkit.core.serialization import load_policy, save_policy
from banditkit.datasets import list_datasets
from banditkit.experiments import load_runs, run_experiment

__all__ = [
    "AssortmentPolicy",
    "Context",
    "ContextualPolicy",
    "DuelingPolicy",
    "Environment",
    "Policy",
    "RunResult",
    "Step",
    "__version__",
    "list_datasets",
    "list_envs",
    "list_policies",
    "load_policy",
    "load_runs",
    "make_env",
    "make_policy",
    "run_experiment",
    "save_policy",
    "simulate",
]
