"""Logs from banditkit's own stored runs: off-policy evaluation on ``banditkit run`` output.

Every stored run records, per round, the action the policy played and its ``propensity``,
the probability with which it played it (``core.records``; NaN when the policy does not know
it). Every registered policy gives them (docs/ope.md, "Propensities of banditkit's policies"):
exact for arg-max and explicitly randomised rules, a Monte Carlo estimate for samplers. Its
runs are therefore logs of bandit feedback that IPS and SNIPS can re-weight to estimate
another policy's value, the more reliably the larger its smallest propensities (an
``explore_floor`` bounds them below).

The runs of dueling and assortment policies are logs of pairs and sets, with the feedback a
replayed policy target learns from (the duels' outcomes, the chosen items).

Contexts are not stored, so a log from stored runs has no features: the direct method and
doubly robust estimator, which fit a reward model on features, cannot be used on it as is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from banditkit.core.validation import check_int
from banditkit.datasets.logs import padded_actions
from banditkit.experiments.config.load import load_config
from banditkit.experiments.store.tidy import load_runs
from banditkit.ope.logs import BanditLog

__all__ = ["log_from_runs"]


def _pick(
    frame_values: Sequence[str], names: Sequence[str], ref: str | None, what: str
) -> str:
    """The label ``ref`` designates (a label, or a registry name used by one entry)."""
    labels = list(dict.fromkeys(frame_values))
    if ref is None:
        if len(labels) == 1:
            return labels[0]
        raise ValueError(
            f"{what}: the directory holds runs of several ({', '.join(labels)}); "
            f"name one with {what}=."
        )
    if ref in labels:
        return ref
    by_name = list(
        dict.fromkeys(
            lab for lab, n in zip(frame_values, names, strict=True) if n == ref
        )
    )
    if len(by_name) == 1:
        return by_name[0]
    raise ValueError(
        f"{what}: no stored runs of {ref!r}; the directory has {', '.join(labels)}."
    )


def log_from_runs(
    directory: str | os.PathLike[str],
    *,
    env: str | None = None,
    policy: str | None = None,
    seeds: Sequence[int] | None = None,
    n_actions: int | None = None,
) -> BanditLog:
    """The stored runs of one policy on one environment as a :class:`BanditLog`.

    The rounds of the chosen runs are concatenated, seed after seed (in the config's order):
    ``rewards`` are the realised rewards, ``actions`` the played arms and ``propensities``
    the policy's probabilities of them. The runs of a dueling policy give a log of pairs
    (``kind="pair"``, ``feedback`` the stored duel outcomes ``won``), those of an assortment
    policy a log of sets (``kind="set"``, the environment's ``capacity``, ``feedback`` the
    stored ``chosen`` items; ``banditkit.datasets.logs``). ``features`` is None: contexts are not stored, so
    only IPS and SNIPS apply (``evaluate(log, target, methods=("ips", "snips"))``); the
    direct method and doubly robust estimator need per-row features this log lacks.

    Args:
        directory: An output directory of ``banditkit run`` (reads stored files only, see
            ``banditkit.load_runs``).
        env: The environment's label or registry name (None: the only one).
        policy: The logging policy's label or registry name (None: the only one).
        seeds: The seeds whose runs to use (None: every finished seed).
        n_actions: K (default: the environment's ``n_arms`` or ``n_items`` parameter, else
            the largest logged action + 1, which undercounts when the last arms were never
            played: give it then).

    Raises:
        ValueError: If ``env`` or ``policy`` designates no stored runs or is needed to choose,
            a seed has no finished run, or the policy records no propensities (NaN; the
            message names it).

    Example:
        >>> import tempfile, banditkit as bk
        >>> out = tempfile.mkdtemp()
        >>> cfg = {"name": "doc", "horizon": 50, "seeds": 2,
        ...        "env": {"name": "linear", "d": 3, "n_arms": 4},
        ...        "policies": [{"name": "random"}]}
        >>> _ = bk.run_experiment(cfg, out, backend="serial", progress="none",
        ...                       figures=False)
        >>> log = bk.ope.log_from_runs(out, policy="random")
        >>> log.n, log.n_actions, float(log.propensities[0])
        (100, 4, 0.25)
    """
    frame = load_runs(directory, columns=None)
    if frame.empty:
        raise ValueError(f"directory: {str(directory)!r} holds no finished runs.")
    env_label = _pick(list(frame["env"]), list(frame["env_name"]), env, "env")
    frame = frame[frame["env"] == env_label]
    label = _pick(list(frame["policy"]), list(frame["policy_name"]), policy, "policy")
    frame = frame[frame["policy"] == label]
    if seeds is not None:
        wanted = [check_int("seeds", s) for s in seeds]
        missing = sorted(set(wanted) - set(frame["seed"]))
        if missing:
            raise ValueError(
                f"seeds: no finished run of {label!r} on {env_label!r} for seed(s) "
                f"{missing}; stored seeds: {sorted(set(frame['seed']))}."
            )
        frame = frame[frame["seed"].isin(wanted)]
    name = str(frame["policy_name"].iloc[0])
    propensities = frame["propensity"].to_numpy(dtype=np.float64)
    if np.isnan(propensities).any():
        raise ValueError(
            f"policy {label!r} ({name}) records no propensities for its actions (NaN in "
            "its stored runs), so its runs are not usable as an off-policy log; a sampler "
            "needs propensity_samples > 0, a policy of your own must propose the law of "
            "its action (Policy.propose)."
        )
    params = _env_params(directory, env_label)
    kind, actions, feedback = _actions(frame)
    top = int(actions.max()) + 1
    if n_actions is None:
        arms = next((params[p] for p in ("n_arms", "n_items") if p in params), None)
        k = int(arms) if isinstance(arms, int) else top
    else:
        k = check_int("n_actions", n_actions, low=top)
    capacity = None
    if kind == "set":  # the environment's capacity, else the largest logged offer
        stored = params.get("capacity")
        capacity = stored if isinstance(stored, int) else int(actions.shape[1])
    return BanditLog(
        rewards=frame["reward"].to_numpy(dtype=np.float64),
        actions=actions,
        propensities=propensities,
        n_actions=k,
        meta={
            "source": str(directory),
            "env": env_label,
            "policy": label,
            "policy_name": name,
            "seeds": sorted(int(s) for s in set(frame["seed"])),
        },
        kind=kind,
        capacity=capacity,
        feedback=feedback,
    )


def _actions(frame: Any) -> tuple[str, np.ndarray, np.ndarray | None]:
    """The log's kind, its actions and the feedback a learning target reads.

    Arms: the ``action`` column. Pairs (a dueling environment's list column of two arms):
    the duels' outcomes, ``won``. Sets: sorted items padded with -1, and the ``chosen``
    item. ``feedback`` is None where the runs did not store it (runs stored before the
    ``won`` record existed).
    """
    column = frame["action"]
    if np.ndim(column.iloc[0]) == 0:
        return "arm", column.to_numpy().astype(np.int64), None
    actions = padded_actions(list(column))
    kind, outcome = ("set", "chosen") if _stored(frame, "chosen") else ("pair", "won")
    feedback = (
        frame[outcome].to_numpy(dtype=np.int64) if _stored(frame, outcome) else None
    )
    return kind, actions, feedback


def _stored(frame: Any, column: str) -> bool:
    """Whether every row of ``frame`` has a value in ``column`` (runs of one environment)."""
    return column in frame and bool(frame[column].notna().all())


def _env_params(directory: str | os.PathLike[str], label: str) -> dict[str, object]:
    """The resolved parameters of the environment labelled ``label`` in ``config.yaml``."""
    cfg = load_config(os.path.join(directory, "config.yaml"))
    return next((dict(e.params) for e in cfg.envs if e.label == label), {})
