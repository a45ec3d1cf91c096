"""Off-policy evaluation on a decision service's own log (``banditkit evaluate --db``).

The log of a contextual policy holds, per decision, the arms' features, the action, the
probability the policy gave it (its propensity) and, once joined, the feedback. The rows
usable for evaluation are the decisions with a propensity, a feedback (a client's, or the
default one learned when the window closed) and the log's most common number of arms K;
the report gives their share of the log.

Each target is estimated with IPS, SNIPS and DR (:mod:`banditkit.ope.estimators`, their
normal-approximation intervals; the DR reward model is fitted by cross-fitting on the arms'
features, :func:`banditkit.ope.cross_fit`):

    logged      the logging policy itself: every importance weight is 1, so each estimator
                is the mean logged reward (its on-policy value)
    uniform     every arm with probability 1/K
    candidates  ``NAME[:k=v,...]``, any registered contextual policy, evaluated by
                progressive validation [Agarwal2016, Sec. 4]: row after row, in log order,
                it decides for the logged context (its target is the one-hot of its
                action, the decision re-seeded from the event id as the service does) and
                then learns the logged action's reward. IPS and DR are linear in the
                target, so the one-hot of a randomised candidate's draw keeps them
                unbiased; each row's target depends only on earlier rows, so the estimate
                is that of the candidate learning from this very log.

References:
    [Agarwal2016] A. Agarwal, S. Bird, M. Cozowicz, L. Hoang, J. Langford, S. Lee, J. Li,
        D. Melamed, G. Oshri, O. Ribas, S. Sen, A. Slivkins. Making contextual decisions
        with low technical debt. arXiv:1606.03966, 2016.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.safe_yaml import yaml_value
from banditkit.serve.state import decode_context, reseed
from banditkit.serve.store import DatabaseError, EventLog

__all__ = [
    "ServiceLog",
    "candidate_target",
    "evaluate_service_log",
    "parse_candidate",
    "read_service_log",
]


@dataclass(frozen=True)
class ServiceLog:
    """The usable rows of a policy's log, in log order.

    Attributes:
        event_ids: (n,) event ids.
        contexts: (n, K, d) the arms' features.
        actions: (n,) logged arms.
        propensities: (n,) their logging probabilities.
        rewards: (n,) joined feedbacks.
        decisions: All decisions of the policy in the log.
        dropped: Decisions left out, by reason.
        policy: The logging policy's id; ``name`` its registry name.
    """

    event_ids: list[str]
    contexts: np.ndarray
    actions: np.ndarray
    propensities: np.ndarray
    rewards: np.ndarray
    decisions: int
    dropped: dict[str, int]
    policy: str
    name: str

    @property
    def n(self) -> int:
        """Usable rows."""
        return len(self.event_ids)


def parse_candidate(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME[:k=v,...]`` as (name, params); values are read as YAML scalars.

    Raises:
        ValueError: A malformed spec (the message names ``--candidate``).

    Example:
        >>> parse_candidate("linucb:nu=0.5,lam=2")
        ('linucb', {'nu': 0.5, 'lam': 2})
    """
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(
                f"--candidate must be NAME[:k=v,...]; {item!r} in {spec!r} is not k=v."
            )
        params[key.strip()] = yaml_value(value, f"--candidate {spec}")
    if not name.strip():
        raise ValueError(f"--candidate must start with a policy name; got {spec!r}.")
    return name.strip(), params


def read_service_log(log: EventLog, policy_id: str) -> ServiceLog:
    """The usable rows of ``policy_id``'s log (see the module docstring).

    Raises:
        DatabaseError: The database never served ``policy_id``.
        ValueError: The policy is not contextual, or no row is usable (the message says
            why).
    """
    definition = log.definition(policy_id)
    if definition is None:
        served = ", ".join(log.policy_ids()) or "none"
        raise DatabaseError(
            f"{log.url} holds no log of policy {policy_id!r} (policies: {served})."
        )
    decisions: dict[str, tuple[Any, Any, Any]] = {}
    rewards: dict[str, float] = {}
    for event in log.read(policy_id):
        if event.kind == "decision":
            assert event.data is not None
            ctx = decode_context(event.payload, event.data)
            decisions[event.event_id] = (ctx, event.payload["action"], event.payload)
        elif event.kind == "feedback":
            rewards[event.event_id] = event.payload["feedback"]
    log.end_read()
    return _usable(policy_id, definition["name"], decisions, rewards)


def _usable(
    policy_id: str,
    name: str,
    decisions: dict[str, tuple[Any, Any, Any]],
    rewards: dict[str, float],
) -> ServiceLog:
    if any(not isinstance(a, int) for _, a, _ in decisions.values()):
        raise ValueError(
            f"policy {policy_id!r} ({name}) plays pairs or sets of arms; off-policy "
            "evaluation covers contextual policies (one arm per decision)."
        )
    arms = Counter(ctx.n_arms for ctx, _, _ in decisions.values())
    k = arms.most_common(1)[0][0] if arms else 0
    dropped = {"no propensity": 0, "no feedback": 0, f"not {k} arms": 0}
    rows = []
    for event_id, (ctx, action, payload) in decisions.items():
        if payload["propensity"] is None:
            dropped["no propensity"] += 1
        elif event_id not in rewards:
            dropped["no feedback"] += 1
        elif ctx.n_arms != k:
            dropped[f"not {k} arms"] += 1
        else:
            rows.append((event_id, ctx.arms, action, payload["propensity"]))
    if len(rows) < 2:
        raise ValueError(
            f"policy {policy_id!r}: {len(rows)} of {len(decisions)} decisions are usable "
            f"({', '.join(f'{v} {r}' for r, v in dropped.items() if v) or 'empty log'}); "
            "off-policy estimates need decisions with propensities (a randomised logging "
            "policy such as eps-greedy) and their feedback."
        )
    return ServiceLog(
        event_ids=[r[0] for r in rows],
        contexts=np.stack([r[1] for r in rows]),
        actions=np.array([r[2] for r in rows], dtype=np.int64),
        propensities=np.array([r[3] for r in rows], dtype=np.float64),
        rewards=np.array([rewards[r[0]] for r in rows], dtype=np.float64),
        decisions=len(decisions),
        dropped=dropped,
        policy=policy_id,
        name=name,
    )


def candidate_target(data: ServiceLog, spec: str) -> np.ndarray:
    """(n, K) one-hot actions of a candidate run by progressive validation on the log.

    Raises:
        ValueError: An unknown name, bad parameters or a non-contextual policy.
    """
    import banditkit as bk
    from banditkit.core import Context

    name, params = parse_candidate(spec)
    policy = bk.make_policy(name, **params)
    if policy.family != "contextual":
        raise ValueError(
            f"--candidate {spec!r}: {name} is a {policy.family} policy; the log is "
            "contextual."
        )
    n, k = data.actions.shape[0], data.contexts.shape[1]
    target = np.zeros((n, k))
    for i in range(n):
        ctx = Context(arms=data.contexts[i])
        reseed(policy, f"decide:{policy.seed}:{data.event_ids[i]}")
        action = policy.act(ctx)
        assert isinstance(action, int)
        target[i, action] = 1.0
        policy.update(ctx, int(data.actions[i]), float(data.rewards[i]))
    return target


def _estimates(
    data: ServiceLog,
    targets: dict[str, np.ndarray],
    methods: tuple[str, ...],
    level: float,
    seed: int,
) -> dict[str, dict[str, Any]]:
    from banditkit import ope

    logged: dict[str, Any] = {
        "rewards": data.rewards,
        "actions": data.actions,
        "propensities": data.propensities,
        "level": level,
    }
    q = None
    if "dr" in methods or "dm" in methods:
        binary = bool(np.isin(data.rewards, (0.0, 1.0)).all())
        q = ope.cross_fit(
            _regressor(binary),
            rewards=data.rewards,
            actions=data.actions,
            n_actions=data.contexts.shape[1],
            contexts=data.contexts,
            seed=seed,
        )
    own = ope.on_policy(rewards=data.rewards, level=level)
    out: dict[str, dict[str, Any]] = {"logged": dict.fromkeys(methods, own)}
    for label, target in targets.items():
        row: dict[str, Any] = {}
        for method in methods:
            if method == "ips":
                row[method] = ope.ips(**logged, target=target)
            elif method == "snips":
                row[method] = ope.snips(**logged, target=target)
            elif method == "dm":
                row[method] = ope.dm(target=target, q=q, level=level)
            else:
                row[method] = ope.dr(**logged, target=target, q=q)
        out[label] = row
    return out


def _regressor(binary: bool) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge

    return LogisticRegression(max_iter=1000) if binary else Ridge(alpha=1.0)


def evaluate_service_log(
    url: str,
    policy_id: str,
    candidates: list[str],
    *,
    methods: tuple[str, ...] = ("ips", "snips", "dr"),
    level: float = 0.95,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """Estimate the logged policy, uniform random and each candidate on the service's log.

    Writes ``out/evaluation.json``, ``out/report.md`` and ``out/estimates.png`` when
    ``out`` is given.

    Returns:
        (the table as text, the report as a JSON-able dict).

    Raises:
        DatabaseError: The database cannot be opened or never served ``policy_id``.
        ValueError: A bad candidate or method, or a log without usable rows.
    """
    from banditkit.core.validation import check_choice
    from banditkit.ope import METHODS

    for m in methods:
        check_choice("methods", m, METHODS)
    log = EventLog(url, create=False)
    try:
        data = read_service_log(log, policy_id)
    finally:
        log.close()
    k = data.contexts.shape[1]
    targets = {"uniform": np.full((data.n, k), 1.0 / k)}
    for spec in candidates:
        targets[spec] = candidate_target(data, spec)
    estimates = _estimates(data, targets, methods, level, seed)
    report = {
        "database": log.url,
        "policy": policy_id,
        "logging_policy": data.name,
        "decisions": data.decisions,
        "usable": data.n,
        "usable_share": data.n / data.decisions,
        "dropped": {r: v for r, v in data.dropped.items() if v},
        "n_arms": k,
        "level": level,
        "estimates": {
            label: {m: _jsonable(e) for m, e in row.items()}
            for label, row in estimates.items()
        },
    }
    text = _table(report, methods)
    if out is not None:
        _write(Path(out), report, text, methods)
    return text, report


def _jsonable(e: Any) -> dict[str, Any]:
    return {"value": e.value, "ci": list(e.ci), "std_error": e.std_error, "n": e.n}


def _table(report: dict[str, Any], methods: tuple[str, ...]) -> str:
    pct = f"{report['level']:.0%}"
    lines = [
        f"policy {report['policy']} ({report['logging_policy']}) in {report['database']}: "
        f"{report['usable']} of {report['decisions']} decisions usable "
        f"({report['usable_share']:.1%}), K = {report['n_arms']}",
        f"{'target':<28}" + "".join(f"{m + f' ({pct} CI)':<30}" for m in methods),
    ]
    for label, row in report["estimates"].items():
        cells = "".join(f"{_cell(row[m]):<30}" for m in methods)
        lines.append(f"{label:<28}{cells}")
    if report["dropped"]:
        left = ", ".join(f"{v} {r}" for r, v in report["dropped"].items())
        lines.append(f"left out: {left}")
    return "\n".join(lines)


def _cell(e: dict[str, Any]) -> str:
    low, high = e["ci"]
    return f"{e['value']:.4g} [{low:.4g}, {high:.4g}]"


def _write(
    out: Path, report: dict[str, Any], text: str, methods: tuple[str, ...]
) -> None:
    from banditkit.core.files import atomic_write_bytes, atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "evaluation.json", json.dumps(report, indent=1) + "\n")
    atomic_write_bytes(out / "estimates.png", _figure(report, methods))
    atomic_write_text(
        out / "report.md",
        f"# Off-policy evaluation of policy {report['policy']}\n\n"
        "Estimates on the service's own log, with their confidence intervals "
        "(`banditkit evaluate --db`).\n\n```\n" + text + "\n```\n\n"
        "![estimates](estimates.png)\n",
    )


def _figure(report: dict[str, Any], methods: tuple[str, ...]) -> bytes:
    """A PNG: each target's estimates with their intervals, one line per method."""
    import io

    from matplotlib.figure import Figure

    labels = list(report["estimates"])
    fig = Figure(figsize=(7, 0.6 * len(labels) * len(methods) + 1.2))
    ax = fig.subplots()
    y = 0.0
    ticks, names = [], []
    for label in labels:
        for m in methods:
            e = report["estimates"][label][m]
            low, high = e["ci"]
            ax.errorbar(
                e["value"],
                y,
                xerr=[[e["value"] - low], [high - e["value"]]],
                fmt="o",
                capsize=3,
                color=f"C{methods.index(m)}",
            )
            ticks.append(y)
            names.append(f"{label} ({m})")
            y -= 1
        y -= 0.5
    ax.set_yticks(ticks, names)
    ax.set_xlabel(f"estimated value ({report['level']:.0%} interval)")
    ax.set_title(f"policy {report['policy']}: {report['usable']} usable decisions")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    return buffer.getvalue()
