"""What ``banditkit evaluate`` runs: off-policy estimates on OBD or a user's log, as a table.

:func:`evaluate_command` takes the command line's options as keyword arguments and returns the
text to print, so the command-line layer only parses and echoes. The targets are read by
:mod:`banditkit.ope.targets` (uniform, a ``.npy`` file, a policy ``NAME[:k=v,...]``, or the
policy entries of a config that the command line resolved).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from banditkit.core.validation import check_choice
from banditkit.ope.estimators import Estimate, on_policy
from banditkit.ope.logs import (
    METHODS,
    BanditLog,
    evaluate,
    format_estimates,
    obd_log,
    read_log,
)
from banditkit.ope.targets import target_probabilities

__all__ = ["MODEL_METHODS", "evaluate_command"]

#: The estimators that fit a reward model on the log's features.
MODEL_METHODS = ("dm", "dr")

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
        needing = [m for m in methods if m in MODEL_METHODS]
        if data.features is None and needing:
            raise ValueError(
                f"{' and '.join(needing)} fit a reward model on the log's features: name "
                "its columns with --feature COLUMN (repeat it), or choose ips and snips."
            )
        return tuple(methods), ""
    if data.features is None:
        return ("ips", "snips"), (
            "note: dr is left out: it fits a reward model on features, and this log has none "
            "(--feature COLUMN names them)."
        )
    return ("ips", "snips", "dr"), ""


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
) -> str:
    """Evaluate each target on a log and return the table of estimates.

    Without ``log``, the log is the Open Bandit Dataset's BTS log of ``campaign``; with
    ``target="uniform"`` the table then also shows the on-policy click rate of the random
    log, the true value of the uniform-random policy. With ``log``, a user's CSV or Parquet
    file is read with :func:`banditkit.ope.read_log` (columns ``reward``, ``action``,
    ``propensity`` and the ``features`` of the reward model and of a policy's contexts).

    Args:
        log: A user's log file, or None for OBD.
        campaign: The OBD campaign ("all", "men", "women").
        target: One target or several: "uniform", a ``.npy`` file of (n, K) action
            probabilities, a policy "NAME[:k=v,...]", or a config's policy entry
            ``{"name": ..., "label": ..., **params}`` (:mod:`banditkit.ope.targets`).
        reward: Reward column of ``log``.
        action: Action column of ``log``.
        propensity: Propensity column of ``log``.
        features: Feature columns of ``log`` (needed by "dm" and "dr").
        methods: Estimators, among :data:`banditkit.ope.METHODS`; None: ips, snips and
            dr (dr left out, with a note, on a log without features).
        level: Coverage of the intervals.
        seed: Seed of the cross-fitting folds and of a policy target.
        encoding: How features become a policy's arms ("block" or "onehot-id").

    Raises:
        ValueError: A bad option; the message names it.
    """
    targets = [target] if isinstance(target, str | os.PathLike | Mapping) else target
    reference: Estimate | None = None
    if log is None:
        data = obd_log("bts", campaign)
        if [str(t) for t in targets] == ["uniform"]:
            reference = on_policy(
                rewards=obd_log("random", campaign).rewards, level=level
            )
        title = (
            f"OBD campaign {campaign!r}: BTS log, n = {data.n}, K = {data.n_actions}"
        )
    else:
        data = read_log(
            log,
            reward=reward,
            action=action,
            propensity=propensity,
            feature_columns=features,
        )
        title = f"{log}: n = {data.n}, K = {data.n_actions}"
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
