"""What ``banditkit evaluate`` runs: off-policy estimates on OBD or a user's log, as a table.

:func:`evaluate_command` takes the command line's options as keyword arguments and returns the
text to print, so the command-line layer only parses and echoes.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from banditkit.core.validation import check_choice
from banditkit.ope.logs import (
    METHODS,
    BanditLog,
    evaluate,
    format_estimates,
    obd_log,
    read_log,
)

__all__ = ["evaluate_command"]


def _target(spec: str | os.PathLike[str], log: BanditLog) -> np.ndarray:
    """``"uniform"`` or a ``.npy`` file holding the (n, K) target probabilities."""
    if str(spec) == "uniform":
        return log.uniform_target()
    path = Path(spec)
    if path.suffix != ".npy" or not path.is_file():
        raise ValueError(
            f"target must be 'uniform' or an existing .npy file of shape (n, K); got {spec!r}."
        )
    return np.asarray(np.load(path), dtype=np.float64)


def evaluate_command(
    *,
    log: str | os.PathLike[str] | None = None,
    campaign: str = "all",
    target: str | os.PathLike[str] = "uniform",
    reward: str = "reward",
    action: str = "action",
    propensity: str = "propensity",
    features: list[str] | None = None,
    methods: tuple[str, ...] = ("ips", "snips", "dr"),
    level: float = 0.95,
    seed: int = 0,
) -> str:
    """Evaluate ``target`` on a log and return the table of estimates.

    Without ``log``, the log is the Open Bandit Dataset's BTS log of ``campaign``; with
    ``target="uniform"`` the table then also shows the on-policy click rate of the random
    log, the true value of the uniform-random policy. With ``log``, a user's CSV or Parquet
    file is read with :func:`banditkit.ope.read_log` (columns ``reward``, ``action``,
    ``propensity`` and the ``features`` of the reward model).

    Args:
        log: A user's log file, or None for OBD.
        campaign: The OBD campaign ("all", "men", "women").
        target: "uniform" or a ``.npy`` file of the target's (n, K) action probabilities.
        reward: Reward column of ``log``.
        action: Action column of ``log``.
        propensity: Propensity column of ``log``.
        features: Feature columns of ``log`` (needed by "dm" and "dr").
        methods: Estimators, among :data:`banditkit.ope.METHODS`.
        level: Coverage of the intervals.
        seed: Seed of the cross-fitting folds.

    Raises:
        ValueError: A bad option; the message names it.
    """
    for m in methods:
        check_choice("methods", m, METHODS)
    reference = None
    if log is None:
        data = obd_log("bts", campaign)
        if str(target) == "uniform":
            from banditkit.ope.estimators import on_policy

            reference = on_policy(
                rewards=obd_log("random", campaign).rewards, level=level
            )
        title = (
            f"OBD campaign {campaign!r}: BTS log, n = {{n}}, K = {{k}}, target {target}"
        )
    else:
        data = read_log(
            log,
            reward=reward,
            action=action,
            propensity=propensity,
            feature_columns=features,
        )
        title = f"{log}: n = {{n}}, K = {{k}}, target {target}"
    if data.features is None and any(m in ("dm", "dr") for m in methods):
        raise ValueError("features must name the reward model's columns for dm and dr.")
    estimates = evaluate(
        data, _target(target, data), methods=methods, level=level, seed=seed
    )
    table = format_estimates(estimates, reference)
    note = "" if reference is None else "\nreference: on-policy CTR of the random log"
    return title.format(n=data.n, k=data.n_actions) + "\n" + table + note
