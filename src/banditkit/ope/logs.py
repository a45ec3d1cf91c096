"""Logged bandit feedback as arrays: the Open Bandit Dataset, a user's table, and evaluation.

:class:`BanditLog` holds what the estimators of :mod:`banditkit.ope.estimators` take
(rewards, actions, propensities) plus per-row features for a reward model.
:func:`obd_log` reads an Open Bandit Dataset log [Saito2020], :func:`read_log` a user's CSV or
Parquet file, and :func:`evaluate` runs several estimators on one log.

OBD positions. Each OBD row is one (position, item) impression: ZOZOTOWN shows three items
(left, centre, right) and the logged propensity is the behaviour policy's probability of the
item at that position. As in OBP's standard setup [Saito2020, Sec. 5] a target policy is
evaluated per position: ``target[i, k]`` is its probability of item k at the logged position of
row i, and the estimate is the click rate averaged over the logged impressions (the three
positions in their logged proportions, about a third each). The uniform-random policy plays
each item with probability 1 / n_items at every position, which is what the "random" logs did,
so their mean click is its on-policy value.

References:
    [Saito2020] Y. Saito, S. Aihara, M. Matsutani, Y. Narita. Open bandit dataset and pipeline:
        towards realistic and reproducible off-policy evaluation. NeurIPS Datasets and
        Benchmarks 2021 (arXiv:2008.07146).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use
from banditkit.core.validation import check_choice, check_int
from banditkit.datasets.logs import ACTION_KINDS, BanditLog, padded_actions
from banditkit.datasets.obd import OBDLog, load_obd
from banditkit.ope.estimators import (
    Estimate,
    direct_method,
    doubly_robust,
    ips,
    on_policy,
    snips,
)
from banditkit.ope.reward_model import cross_fit

__all__ = [
    "METHODS",
    "MODEL_METHODS",
    "BanditLog",
    "check_methods_apply",
    "evaluate",
    "format_estimates",
    "obd_log",
    "obd_uniform_check",
    "read_log",
]

#: Estimators :func:`evaluate` knows; "dm" and "dr" need a reward model.
METHODS = ("ips", "snips", "dm", "dr")

#: The estimators that fit a reward model on the log's features (logs of arms only).
MODEL_METHODS = ("dm", "dr")


def _onehot(codes: np.ndarray, levels: list[int]) -> np.ndarray:
    blocks = [np.eye(m)[c] for c, m in zip(codes.T, levels, strict=True)]
    return np.hstack(blocks) if blocks else np.zeros((codes.shape[0], 0))


def obd_log(log: OBDLog) -> BanditLog:
    """An Open Bandit Dataset log as arrays: clicks, items, propensities and features.

    The features (for a reward model) are the one-hot user features followed by the one-hot
    position; the item is appended per action by :func:`banditkit.ope.reward_model.cross_fit`.
    See the module docstring for the handling of positions.

    Args:
        log: A log as ``banditkit.datasets.load_obd`` reads it (which logging policy,
            campaign and variant, from where): ``load_obd("bts")`` is the log of
            Bernoulli Thompson sampling, with propensities estimated by the dataset's
            authors; ``load_obd("random")`` the uniform one.

    Raises:
        TypeError: ``log`` is not a loaded log (the signature before 2026-12-05 took the
            policy and campaign: ``obd_log("bts", "all")`` is now
            ``obd_log(load_obd("bts", "all"))``).
    """
    if not isinstance(log, OBDLog):
        raise TypeError(
            "obd_log takes a log loaded by banditkit.datasets.load_obd, e.g. "
            f"obd_log(load_obd('bts', 'all')); got {type(log).__name__} {log!r:.40}."
        )
    levels = [int(m) for m in log.user_levels]
    position = log.position - 1
    features = np.hstack(
        [_onehot(log.user_codes, levels), np.eye(3)[np.clip(position, 0, 2)]]
    )
    return BanditLog(
        rewards=log.click.astype(np.float64),
        actions=log.item_id,
        propensities=log.propensity,
        n_actions=log.n_items,
        features=features,
        positions=log.position,
        meta={"source": "obd", **log.meta},
    )


def read_log(
    path: str | os.PathLike[str],
    *,
    reward: str = "reward",
    action: str = "action",
    propensity: str = "propensity",
    feature_columns: list[str] | None = None,
    n_actions: int | None = None,
    action_kind: str = "arm",
    capacity: int | None = None,
    feedback: str | None = None,
) -> BanditLog:
    """Read a user's log from a CSV or Parquet file, one row per logged round.

    A pair or a set is one cell of the action column: a list (Parquet) or its items as text,
    separated by spaces, commas or semicolons, brackets allowed (``"2 4"``, ``"[0, 3, 5]"``).

    Args:
        path: A ``.csv`` or ``.parquet`` file.
        reward: Column of the rewards.
        action: Column of the logged actions: integers in [0, K), or pairs, or sets.
        propensity: Column of the logging probabilities of the logged actions (of the pair
            or set as a whole).
        feature_columns: Numeric columns used as per-row features by a reward model (None:
            none).
        n_actions: K (default: the largest logged action or item + 1).
        action_kind: "arm", "pair" (ordered (i, j): duels) or "set" (assortments).
        capacity: The largest set a round may offer ("set"; default the largest logged).
        feedback: Column of what a policy learning from the log observes (pairs: 1 when the
            first arm won, else 0; sets: the chosen item, -1 for none), or None.

    Raises:
        ValueError: A missing column or bad values; the message names it.
    """
    check_choice("action_kind", action_kind, ACTION_KINDS)
    file = Path(path)
    frame = pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)
    extra = [c for c in (feedback,) if c is not None]
    columns = [reward, action, propensity, *(feature_columns or []), *extra]
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{file}: missing columns {missing}; it has {list(frame.columns)}."
        )
    actions = _read_actions(frame[action], action, action_kind)
    top = int(actions.max()) + 1
    k = top if n_actions is None else check_int("n_actions", n_actions, low=1)
    if action_kind == "set" and capacity is None:
        capacity = int(actions.shape[1])
    return BanditLog(
        rewards=frame[reward].to_numpy(dtype=np.float64),
        actions=actions,
        propensities=frame[propensity].to_numpy(dtype=np.float64),
        n_actions=k,
        features=frame[feature_columns].to_numpy(dtype=np.float64)
        if feature_columns
        else None,
        meta={"source": str(file)},
        kind=action_kind,
        capacity=capacity,
        feedback=None if feedback is None else frame[feedback].to_numpy(),
    )


def _read_actions(column: Any, name: str, kind: str) -> np.ndarray:
    """A column of arms as (n,) ints; of pairs or sets as (n, m) ints padded with -1."""
    values = column.to_numpy()
    if kind == "arm":
        if values.dtype.kind not in "iu":
            raise ValueError(
                f"action column {name!r} must hold integers; got {values.dtype}."
            )
        return values.astype(np.int64)
    rows = []
    for i, cell in enumerate(values):
        text = cell if isinstance(cell, str) else " ".join(map(str, np.ravel(cell)))
        if not re.fullmatch(r"[\s\[\]\(\),;]*(-?\d+[\s\[\]\(\),;]*)+", text):
            raise ValueError(
                f"action column {name!r} must hold a {kind} of integer items per row "
                f'("2 4" or "[2, 4]"); row {i} is {cell!r}.'
            )
        rows.append([int(x) for x in re.findall(r"-?\d+", text)])
    return padded_actions(rows)


def evaluate(
    log: BanditLog,
    target: Any,
    *,
    methods: tuple[str, ...] = ("ips", "snips", "dr"),
    regressor: Any = None,
    n_folds: int = 2,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Estimate]:
    """Run several estimators on one log and return {method: estimate}.

    Args:
        log: The logged feedback.
        target: (n, K) the evaluated policy's action probabilities per logged row (e.g.
            ``log.uniform_target()``); on a log of pairs or sets, (n,) its probability of
            each logged action (:func:`banditkit.ope.target_probabilities` gives either).
        methods: Among :data:`METHODS`; "ips" and "snips" only on pairs or sets.
        regressor: The scikit-learn estimator of "dm" and "dr", fitted by cross-fitting on
            ``log.features``; default a logistic regression for 0/1 rewards, else a ridge
            regression.
        n_folds: Folds of the cross-fitting.
        seed: Seed of the fold assignment.
        level: Coverage of the intervals.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> log = BanditLog(rewards=rng.random(50), actions=rng.integers(2, size=50),
        ...                 propensities=np.full(50, 0.5), n_actions=2)
        >>> sorted(evaluate(log, log.uniform_target(), methods=("ips", "snips")))
        ['ips', 'snips']
    """
    for m in methods:
        check_choice("methods", m, METHODS)
    check_methods_apply(log, methods)
    logged: dict[str, Any] = {
        "rewards": log.rewards,
        "propensities": log.propensities,
        "level": level,
    }
    if log.kind == "arm":
        logged.update(actions=log.actions, target=target)
    else:
        logged.update(target_propensities=target)
    out: dict[str, Estimate] = {}
    if "ips" in methods:
        out["ips"] = ips(**logged)
    if "snips" in methods:
        out["snips"] = snips(**logged)
    model_methods = [m for m in methods if m in ("dm", "dr")]
    if model_methods:
        if log.features is None:
            raise ValueError(
                "log has no features: dm and dr need them to fit a regressor."
            )
        model = regressor if regressor is not None else _default_regressor(log.rewards)
        # One cross-fitted model serves both estimators.
        q = cross_fit(
            model,
            rewards=log.rewards,
            actions=log.actions,
            n_actions=log.n_actions,
            features=log.features,
            n_folds=n_folds,
            seed=seed,
        )
        if "dm" in methods:
            out["dm"] = direct_method(target=target, q=q, level=level)
        if "dr" in methods:
            out["dr"] = doubly_robust(**logged, q=q)
    return {m: out[m] for m in methods}


def check_methods_apply(log: BanditLog, methods: Sequence[str]) -> None:
    """Refuse "dm" and "dr" on a log of pairs or sets (no reward model over them here).

    Raises:
        ValueError: Naming the estimators that work (ips, snips).
    """
    model = [m for m in methods if m in MODEL_METHODS]
    if log.kind != "arm" and model:
        raise ValueError(
            f"methods: {' and '.join(model)} need a reward model of every {log.kind} of a "
            f"round, which banditkit does not fit; a log of {log.kind}s is evaluated by "
            "ips and snips."
        )


def obd_uniform_check(
    campaign: str = "all",
    *,
    methods: tuple[str, ...] = ("ips", "snips", "dr"),
    variant: str = "auto",
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[dict[str, Estimate], Estimate]:
    """Evaluate the uniform-random policy on OBD's BTS log, and measure it on the random log.

    The off-policy estimates (``methods`` on the "bts" log of ``campaign``, with
    ``target = 1 / n_items``) should agree with the on-policy click rate of the "random" log
    of the same campaign, which played that very policy.

    Returns:
        ({method: estimate}, on-policy estimate of the random log's click rate).
    """
    bts, uniform = (
        obd_log(load_obd(p, campaign, variant=variant, root=root, download=download))
        for p in ("bts", "random")
    )
    estimates = evaluate(
        bts, bts.uniform_target(), methods=methods, seed=seed, level=level
    )
    return estimates, on_policy(rewards=uniform.rewards, level=level)


def _default_regressor(rewards: np.ndarray) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    if np.isin(rewards, (0.0, 1.0)).all():
        return LogisticRegression(C=1.0, max_iter=1000)
    return Ridge(alpha=1.0)


def format_estimates(
    estimates: dict[str, Estimate], reference: Estimate | None = None
) -> str:
    """A plain-text table of estimates (and of a reference value, e.g. an on-policy mean).

    Example:
        >>> e = on_policy(rewards=[0.0, 1.0, 1.0, 0.0])
        >>> print(format_estimates({"on-policy": e}))  # doctest: +NORMALIZE_WHITESPACE
        method      estimate   95% CI                   contains reference
        on-policy   0.5        [-0.06579, 1.066]        -
    """
    pct = next(iter(estimates.values())).level if estimates else 0.95
    header = f"{pct:.0%} CI"
    lines = [f"{'method':<11} {'estimate':<10} {header:<24} contains reference"]
    for name, e in estimates.items():
        inside = (
            "-"
            if reference is None
            else ("yes" if e.contains(reference.value) else "NO")
        )
        ci = f"[{e.ci[0]:.4g}, {e.ci[1]:.4g}]"
        lines.append(f"{name:<11} {e.value:<10.4g} {ci:<24} {inside}")
    if reference is not None:
        ci = f"[{reference.ci[0]:.4g}, {reference.ci[1]:.4g}]"
        lines.append(
            f"{'reference':<11} {reference.value:<10.4g} {ci:<24} ({reference.method})"
        )
    return "\n".join(lines)
