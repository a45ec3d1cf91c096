"""Size limits: estimate the memory an experiment needs and refuse one that cannot fit.

A config can ask for more than any machine holds (``seeds: 1e9``, ``n_arms: 1e9``); without a
bound such an experiment is killed for lack of memory part-way, or takes the machine down.
:func:`estimate_memory` gives a lower-bound estimate from the config alone (nothing is built):
the per-round result columns of every run, which the summary holds at once, and the largest
run's arrays from the environments' declared sizes and the policies' (their histories and
networks: ``width: 1e9`` is refused here, not deep in an allocator). :func:`check_size`,
called by ``config.load.load_config`` before anything is built or written, refuses an
experiment above :func:`memory_limit` with a
:class:`~banditkit.experiments.config.errors.ConfigError` that states the estimate and the limit (80% of physical memory, or ``BANDITKIT_MAX_MEMORY``).
"""

from __future__ import annotations

import inspect
import os
import re
from typing import Any

from banditkit.core import ENVIRONMENTS, POLICIES
from banditkit.core.environment import ContextualEnvironment
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.schema import EnvSpec, ExperimentConfig, PolicySpec

__all__ = [
    "MEMORY_FRACTION",
    "MEMORY_LIMIT_ENV",
    "check_size",
    "estimate_memory",
    "memory_limit",
    "policy_memory",
]

MEMORY_LIMIT_ENV = "BANDITKIT_MAX_MEMORY"
"""Environment variable overriding :func:`memory_limit` (bytes, or a number with K/M/G/T)."""

MEMORY_FRACTION = 0.8
"""Default limit: this fraction of the machine's physical memory."""

_RUN_OVERHEAD_BYTES = 4096
"""Fixed memory per run: its spec, metadata and summary rows (a rough upper bound)."""

RESULT_COLUMNS = len(ContextualEnvironment.declared_records()) + 2
"""Columns of a contextual run's table: its declared records, ``t`` and R(t) (``store.tables``)."""

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def memory_limit() -> int | None:
    """The most memory an experiment may be estimated to need, in bytes.

    ``BANDITKIT_MAX_MEMORY`` (e.g. ``16G``, ``500M``, ``0`` or ``none`` for no limit) if set,
    else ``MEMORY_FRACTION`` of the physical memory (``os.sysconf``); None when unknown.

    Raises:
        ConfigError: If ``BANDITKIT_MAX_MEMORY`` cannot be read.
    """
    raw = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if raw:
        if raw.lower() in {"0", "none"}:
            return None
        match = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)i?b?", raw.lower())
        if match is None:
            raise ConfigError(
                f"expected a size such as 16G, 500M or a number of bytes; got {raw!r}",
                field=MEMORY_LIMIT_ENV,
            )
        return int(float(match.group(1)) * _UNITS[match.group(2)])
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return None
    return int(total * MEMORY_FRACTION) if total > 0 else None


def _size(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _declared(
    registry: Any, spec: EnvSpec | PolicySpec, keys: tuple[str, ...]
) -> dict[str, int]:
    """The integer ``keys`` of an entry's parameters, its class's defaults included."""
    defaults: dict[str, Any] = {}
    if spec.name in registry:
        try:
            signature = inspect.signature(registry.get(spec.name))
            defaults = {
                k: p.default
                for k, p in signature.parameters.items()
                if p.default is not inspect.Parameter.empty
            }
        except (TypeError, ValueError):  # pragma: no cover - not introspectable
            defaults = {}
    sizes = {}
    for key in keys:
        value = _size(spec.params.get(key, defaults.get(key)))
        if value is not None:
            sizes[key] = value
    return sizes


def _env_sizes(spec: EnvSpec) -> dict[str, int]:
    """Declared ``n_arms``, ``d`` and ``pool`` of an environment (its defaults included)."""
    return _declared(ENVIRONMENTS, spec, ("n_arms", "d", "pool"))


def policy_memory(spec: PolicySpec, d: int, horizon: int) -> tuple[int, str]:
    """A lower bound on the memory (bytes) one policy keeps in a run, and what counts.

    Counted: the history of ``horizon`` rounds (one d-vector, an action and a reward per
    round; policies keep what they learn from), and, for a policy with a ``width``, its
    network's weights and their gradients, ``2 (d m + (L - 1) m^2 + m)`` numbers for
    width m and depth L (1 when not declared), once per member (``m``, the ensemble
    size of the perturbed-ensemble policies), and a p x p matrix over those p weights
    when ``gram: full``.

    Example:
        >>> from banditkit.experiments.config.schema import PolicySpec
        >>> needed, how = policy_memory(PolicySpec(name="neural-ucb", width=10**6), 10, 1)
        >>> needed > 8 * 10**12, "width" in how
        (True, True)
    """
    sizes = _declared(POLICIES, spec, ("width", "depth", "m"))
    history = 8 * horizon * (d + 2)
    width = sizes.get("width", 0)
    weights = (d * width + max(sizes.get("depth", 1) - 1, 0) * width**2 + width) * max(
        sizes.get("m", 1), 1
    )
    network = 8 * 2 * weights
    if spec.params.get("gram") == "full":
        network += 8 * weights**2
    dims = ", ".join(f"{key}={value:,}" for key, value in sizes.items())
    return history + network, f"policy {spec.label or spec.name}" + (
        f" ({dims})" if dims else ""
    )


def estimate_memory(config: ExperimentConfig) -> tuple[int, str]:
    """A lower-bound estimate of the memory (bytes) an experiment needs, and how it adds up.

    Counted: the per-round result columns of every run, which the summary holds at once
    (runs x horizon x columns x 8 bytes, plus a few KiB per run), and the largest run's own
    arrays: the environment's from its declared sizes (one round's arms, n_arms x d; the
    pool, pool x d; a d x d matrix of the policy) and the largest policy's
    (:func:`policy_memory`: its history and its network). Datasets are not counted, nor
    parallel workers beyond one.

    Example:
        >>> from banditkit.experiments.config.load import load_config
        >>> cfg = load_config({"name": "x", "horizon": 1000, "seeds": 10,
        ...                    "env": {"name": "linear", "d": 5, "n_arms": 4},
        ...                    "policies": [{"name": "random"}]})
        >>> needed, how = estimate_memory(cfg)
        >>> how.split(" x ")[:2], needed > 10 * 1000 * 8
        (['10 runs', '1,000 rounds'], True)
    """
    n_seeds = config.seeds if isinstance(config.seeds, int) else len(config.seeds)
    n_runs = len(config.envs) * len(config.policies) * n_seeds
    per_round = RESULT_COLUMNS * 8
    results = n_runs * (config.horizon * per_round + _RUN_OVERHEAD_BYTES)
    largest, which = 0, ""
    for spec in config.envs:
        sizes = _env_sizes(spec)
        k, d, pool = sizes.get("n_arms", 1), sizes.get("d", 1), sizes.get("pool", 0)
        env = 8 * (k * d + pool * d + d * d)
        own, whose = max(
            (policy_memory(p, d, config.horizon) for p in config.policies),
            default=(0, ""),
        )
        if env + own > largest:
            dims = ", ".join(f"{key}={value:,}" for key, value in sizes.items())
            largest = env + own
            which = f"environment {spec.label or spec.name} ({dims}) and {whose}"
    how = (
        f"{n_runs:,} runs x {config.horizon:,} rounds x {RESULT_COLUMNS} result columns"
        + (f"; one run of {which}: {_human(largest)}" if largest else "")
    )
    return results + largest, how


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:,.1f} {unit}" if unit != "B" else f"{n} B"
        size /= 1024
    raise AssertionError  # pragma: no cover


def check_size(config: ExperimentConfig, *, source: str | None = None) -> None:
    """Refuse an experiment whose estimated memory is above :func:`memory_limit`.

    Raises:
        ConfigError: With the estimate, how it adds up, and the limit.

    Example:
        >>> from banditkit.experiments.config.load import load_config
        >>> cfg = load_config({"name": "x", "horizon": 10, "seeds": 2,
        ...                    "env": {"name": "linear"}, "policies": [{"name": "random"}]})
        >>> big = cfg.model_copy(update={"seeds": 10**12})
        >>> check_size(big)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        banditkit.experiments.config.errors.ConfigError: the experiment needs an estimated ... of memory ...
    """
    limit = memory_limit()
    if limit is None:
        return
    needed, how = estimate_memory(config)
    if needed > limit:
        origin = (
            f"set by {MEMORY_LIMIT_ENV}"
            if os.environ.get(MEMORY_LIMIT_ENV, "").strip()
            else f"{MEMORY_FRACTION:.0%} of this machine's memory; {MEMORY_LIMIT_ENV} "
            "changes it"
        )
        raise ConfigError(
            f"the experiment needs an estimated {_human(needed)} of memory ({how}), more "
            f"than the limit of {_human(limit)} ({origin}). Reduce the seeds, the horizon "
            "or the environment and policy sizes.",
            source=source,
        )
