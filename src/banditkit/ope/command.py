"""What ``banditkit evaluate`` runs: off-policy estimates on OBD or a user's log, as a table.

:func:`evaluate_command` takes the command line's options as keyword arguments and returns the
text to print, so the command-line layer only parses and echoes. The targets are read by
:mod:`banditkit.ope.targets` (uniform, a ``.npy`` file, a policy ``NAME[:k=v,...]``, or the
policy entries of a config that the command line resolved).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from banditkit.core.validation import check_choice
from banditkit.datasets.obd import load_obd
from banditkit.ope.estimators import Estimate, on_policy
from banditkit.ope.logs import (
    METHODS,
    MODEL_METHODS,
    BanditLog,
    check_methods_apply,
    evaluate,
    format_estimates,
    obd_log,
    read_log,
)
from banditkit.ope.stored import log_from_runs
from banditkit.ope.targets import target_probabilities

__all__ = ["MODEL_METHODS", "evaluate_command"]

Target = str | os.PathLike[str] | Mapping[str, Any]


def _methods(
    methods: Sequence[str] | None, data: BanditLog
) -> tuple[tuple[str, ...], str]:
    """The estimators to run, and a note when the defaults left some out.

    Without ``methods``: ips, snips and dr, or ips and snips on a log without features
    (dm and dr need a reward model's features). Asked for explicitly, dm or dr on such a
    log is an error naming ``--feature``.
    """
    if methods:
        for m in methods:
            check_choice("methods", m, METHODS)
        check_methods_apply(data, methods)
        needing = [m for m in methods if m in MODEL_METHODS]
        if data.features is None and needing:
            raise ValueError(
                f"{' and '.join(needing)} fit a reward model on the log's features: name "
                "its columns with --feature COLUMN (repeat it), or choose ips and snips."
            )
        return tuple(methods), ""
    if data.kind != "arm":
        return ("ips", "snips"), (
            f"note: dm and dr are left out: they need a reward model of every {data.kind} "
            "of a round, which banditkit does not fit."
        )
    if data.features is None:
        return ("ips", "snips"), (
            "note: dr is left out: it fits a reward model on features, and this log has none "
            "(--feature COLUMN names them)."
        )
    return ("ips", "snips", "dr"), ""


def _kind(data: BanditLog) -> str:
    """The title's ", actions: pairs" on a log of pairs or sets (nothing on arms)."""
    return "" if data.kind == "arm" else f", actions: {data.kind}s"


def _label(target: Target) -> str:
    if isinstance(target, Mapping):
        return str(target.get("label") or target["name"])
    return str(target)


def evaluate_command(
    *,
    log: str | os.PathLike[str] | None = None,
    campaign: str = "all",
    target: Target | Sequence[Target] = "uniform",
    reward: str = "reward",
    action: str = "action",
    propensity: str = "propensity",
    features: list[str] | None = None,
    methods: Sequence[str] | None = None,
    level: float = 0.95,
    seed: int = 0,
    encoding: str = "block",
    action_kind: str = "arm",
    capacity: int | None = None,
    feedback: str | None = None,
    env: str | None = None,
    logger: str | None = None,
) -> str:
    """Evaluate each target on a log and return the table of estimates.

    Without ``log``, the log is the Open Bandit Dataset's BTS log of ``campaign``; with
    ``target="uniform"`` the table then also shows the on-policy click rate of the random
    log, the true value of the uniform-random policy. With ``log``, a user's CSV or Parquet
    file is read with :func:`banditkit.ope.read_log` (columns ``reward``, ``action``,
    ``propensity`` and the ``features`` of the reward model and of a policy's contexts),
    and an output directory of ``banditkit run`` with :func:`banditkit.ope.log_from_runs`
    (the runs of one logging policy on one environment: arms, pairs or sets).

    Args:
        log: A user's log file, a run directory, or None for OBD.
        campaign: The OBD campaign ("all", "men", "women").
        target: One target or several: "uniform", a ``.npy`` file of (n, K) action
            probabilities, a policy "NAME[:k=v,...]", or a config's policy entry
            ``{"name": ..., "label": ..., **params}`` (:mod:`banditkit.ope.targets`).
        reward: Reward column of ``log``.
        action: Action column of ``log``.
        propensity: Propensity column of ``log``.
        features: Feature columns of ``log`` (needed by "dm" and "dr").
        methods: Estimators, among :data:`banditkit.ope.METHODS`; None: ips, snips and
            dr (dr left out, with a note, on a log without features; dm and dr on
            pairs or sets).
        level: Coverage of the intervals.
        seed: Seed of the cross-fitting folds and of a policy target.
        encoding: How features become a policy's arms ("block" or "onehot-id").
        action_kind: What ``log``'s action column holds: "arm", "pair" or "set"
            (:func:`banditkit.ope.read_log`).
        capacity: The largest set of a log of sets.
        feedback: The feedback column a policy target learns from on pairs or sets.
        env: A run directory's environment (label or name; None: the only one).
        logger: A run directory's logging policy (label or name; None: the only one).

    Raises:
        ValueError: A bad option; the message names it.
    """
    targets = [target] if isinstance(target, str | os.PathLike | Mapping) else target
    reference: Estimate | None = None
    if log is None:
        data = obd_log(load_obd("bts", campaign))
        if [str(t) for t in targets] == ["uniform"]:
            reference = on_policy(
                rewards=obd_log(load_obd("random", campaign)).rewards, level=level
            )
        title = (
            f"OBD campaign {campaign!r}: BTS log, n = {data.n}, K = {data.n_actions}"
        )
    elif Path(log).is_dir():
        data = log_from_runs(log, env=env, policy=logger)
        title = (
            f"{log}: runs of {data.meta['policy']} on {data.meta['env']}, n = {data.n}, "
            f"K = {data.n_actions}{_kind(data)}"
        )
    else:
        data = read_log(
            log,
            reward=reward,
            action=action,
            propensity=propensity,
            feature_columns=features,
            action_kind=action_kind,
            capacity=capacity,
            feedback=feedback,
        )
        title = f"{log}: n = {data.n}, K = {data.n_actions}" + _kind(data)
    chosen, note = _methods(methods, data)
    lines = [title]
    for each in targets:
        probabilities = target_probabilities(each, data, encoding=encoding, seed=seed)
        estimates = evaluate(
            data, probabilities, methods=chosen, level=level, seed=seed
        )
        lines += [f"target {_label(each)}", format_estimates(estimates, reference)]
    if reference is not None:
        lines.append("reference: on-policy CTR of the random log")
    if note:
        lines.append(note)
    return "\n".join(lines)
