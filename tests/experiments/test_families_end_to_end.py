"""A toy dueling and a toy assortment environment, written here, run through the platform.

They declare their records on top of their family base and need no platform change: the
declared columns reach the Parquet tables, ``summary.json`` (with checkpoints), a claim and a
figure. The policies are test-local too (registered under ``test-*`` names for the module).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from banditkit.core import (
    ENVIRONMENTS,
    POLICIES,
    AssortmentEnvironment,
    Context,
    DuelingEnvironment,
    Policy,
    Record,
    Step,
    make_env,
    simulate,
)
from banditkit.core.types import Action, Feedback
from banditkit.experiments import run_experiment


class ToyDuel(DuelingEnvironment):
    """K arms with random linear utilities u = X theta; BTL duels."""

    def __init__(self, *, n_arms: int = 4, d: int = 3) -> None:
        super().__init__()
        self.n_arms = n_arms
        self.d = d
        self._theta = np.zeros(d)
        self._u = np.zeros(n_arms)
        self._xi = 0.0

    def _reset(self) -> None:
        self._theta = self.instance_rng.normal(size=self.d)

    def _next_context(self) -> Context:
        arms = self.context_rng.normal(size=(self.n_arms, self.d))
        self._u = arms @ self._theta
        self._xi = float(self.noise_rng.random())
        return Context(arms=arms)

    def best_action(self) -> tuple[int, int]:
        best = int(np.argmax(self._u))
        return (best, best)

    def _step(self, ctx: Context, action: Action) -> Step:
        i, j = action  # type: ignore[misc]
        u, best = self._u, float(self._u.max())
        won = int(self._xi < 1.0 / (1.0 + math.exp(-(u[i] - u[j]))))
        return Step(
            feedback=won,
            reward=float((u[i] + u[j]) / 2),
            regret=float(best - (u[i] + u[j]) / 2),
            values={
                "weak_regret": float(best - max(u[i], u[j])),
                "strong_regret": float(best - min(u[i], u[j])),
            },
        )


class ToyAssortment(AssortmentEnvironment):
    """K items with random MNL utilities and revenues; offers of at most ``capacity``."""

    records: ClassVar[tuple[Record, ...]] = (
        Record(
            "purchased",
            dtype="bool",
            aggregation="mean",
            description="the customer bought an item",
            higher_is_better=True,
            plot=("purchased",),
        ),
    )

    def __init__(self, *, n_items: int = 5, d: int = 2, capacity: int = 2) -> None:
        super().__init__()
        self.n_items = n_items
        self.d = d
        self.capacity = capacity
        self._theta = np.zeros(d)
        self._v = np.zeros(n_items)
        self._rev = np.zeros(n_items)
        self._xi = 0.0

    def _reset(self) -> None:
        self._theta = self.instance_rng.normal(size=self.d)

    def _next_context(self) -> Context:
        arms = self.context_rng.normal(size=(self.n_items, self.d))
        self._v = np.exp(arms @ self._theta)
        self._rev = self.context_rng.uniform(0.5, 1.0, size=self.n_items)
        self._xi = float(self.noise_rng.random())
        return Context(arms=arms, revenues=self._rev, max_size=self.capacity)

    def _expected(self, items: tuple[int, ...]) -> float:
        v = self._v[list(items)]
        return float((self._rev[list(items)] * v).sum() / (1.0 + v.sum()))

    def best_action(self) -> tuple[int, ...]:
        offers = [
            s
            for k in range(1, self.capacity + 1)
            for s in itertools.combinations(range(self.n_items), k)
        ]
        return max(offers, key=self._expected)

    def _step(self, ctx: Context, action: Action) -> Step:
        items = tuple(action)  # type: ignore[arg-type]
        v = self._v[list(items)]
        cumulative = np.cumsum(v / (1.0 + v.sum()))
        pick = int(np.searchsorted(cumulative, self._xi, side="right"))
        chosen = items[pick] if pick < len(items) else -1
        revenue = float(self._rev[chosen]) if chosen >= 0 else 0.0
        regret = self._expected(self.best_action()) - self._expected(items)
        return Step(
            feedback=chosen,
            reward=revenue,
            regret=regret,
            values={
                "revenue": self._expected(items),
                "chosen": chosen,
                "purchased": float(chosen >= 0),
            },
        )


class TestRandomAssortment(Policy):
    """A uniformly random offer of ``max_size`` items, with its propensity."""

    __test__ = False
    family = "assortment"

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)

    def _act(self, ctx: Context) -> Action:
        size = ctx.max_size or ctx.n_arms
        self.last_propensity = 1.0 / math.comb(ctx.n_arms, size)
        return tuple(int(i) for i in self.rng.choice(ctx.n_arms, size, replace=False))

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass


class _Oracle(Policy):
    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self._env: Any = None

    def attach(self, env: Any) -> None:
        self._env = env

    def _act(self, ctx: Context) -> Action:
        self.last_propensity = 1.0
        return self._env.best_action()  # type: ignore[no-any-return]

    def _update(self, ctx: Context, action: Action, feedback: Feedback) -> None:
        pass


class DuelOracle(_Oracle):
    family = "dueling"


class AssortmentOracle(_Oracle):
    family = "assortment"


REGISTERED = {
    (ENVIRONMENTS, "test-toy-duel"): ToyDuel,
    (ENVIRONMENTS, "test-toy-assortment"): ToyAssortment,
    (POLICIES, "test-random-assortment"): TestRandomAssortment,
    (POLICIES, "test-oracle-duel"): DuelOracle,
    (POLICIES, "test-oracle-assortment"): AssortmentOracle,
}


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Iterator[None]:
    for (registry, name), obj in REGISTERED.items():
        registry.register(name)(obj)
    try:
        yield
    finally:
        for registry, name in REGISTERED:
            del registry._entries[name]


def _config(env: str, policies: list[str], claim: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": f"toy-{env}",
        "horizon": 60,
        "seeds": 3,
        "checkpoints": [20, 40],
        "band": "se",
        "env": {"name": env, "label": "toy"},
        "policies": [{"name": p} for p in policies],
        "claims": [claim],
    }


def test_toy_dueling_family_end_to_end(tmp_path):
    claim = {
        "id": "oracle-low",
        "kind": "below",
        "metric": "average_weak_regret",
        "at": 40,
        "policy": "test-oracle-duel",
        "other": "random-duel",
    }
    cfg = _config("test-toy-duel", ["random-duel", "test-oracle-duel"], claim)
    res = run_experiment(cfg, tmp_path, backend="serial", progress="none")
    assert res.ok and res.n_runs == 6

    tables = [pq.read_table(p) for p in sorted((tmp_path / "runs").glob("*.parquet"))]
    table = tables[0]
    for name in ("weak_regret", "strong_regret", "regret", "action", "propensity"):
        assert name in table.column_names
    action_type = table.schema.field("action").type
    assert pa.types.is_list(action_type) and action_type.value_type == pa.int64()
    pairs = table.column("action").to_pylist()
    assert len(pairs) == 60 and all(len(p) == 2 for p in pairs)

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["checkpoints"] == [20, 40] and summary["band"] == "se"
    rows = {r["label"]: r for r in summary["results"]}
    weak = rows["random-duel"]["metrics"]["average_weak_regret"]
    assert set(weak["checkpoints"]) == {"20", "40"}
    assert weak["checkpoints"]["40"]["n"] == 3 and weak["final"]["mean"] > 0
    oracle = rows["test-oracle-duel"]["metrics"]
    assert oracle["strong_regret"]["final"]["mean"] == 0.0
    assert summary["claims"][0]["passed"] is True
    assert "at t=40" in summary["claims"][0]["text"]

    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"regret-toy.png", "average-regret-toy.png"} <= figures
    report_free = (tmp_path / "figures" / "average-regret-toy.svg").read_text()
    assert "fewer than 5 seeds" in report_free and "standard error" in report_free


def test_toy_assortment_family_end_to_end(tmp_path):
    claim = {
        "id": "oracle-revenue",
        "kind": "top-k",
        "metric": "average_revenue",
        "at": 20,
        "k": 1,
        "policies": ["test-oracle-assortment"],
    }
    cfg = _config(
        "test-toy-assortment",
        ["test-random-assortment", "test-oracle-assortment"],
        claim,
    )
    cfg["metrics"] = ["average_reward"]  # the realised revenue per round
    res = run_experiment(cfg, tmp_path, backend="serial", progress="none")
    assert res.ok

    for path in (tmp_path / "runs").glob("*.parquet"):
        table = pq.read_table(path)
        chosen = np.asarray(table.column("chosen"))
        offers = table.column("action").to_pylist()
        assert chosen.dtype == np.int64 and table.num_rows == 60
        assert all(c == -1 or c in o for c, o in zip(chosen, offers, strict=True))
        assert table.column("purchased").type == pa.bool_()
        assert np.array_equal(np.asarray(table.column("purchased")), chosen >= 0)

    summary = json.loads((tmp_path / "summary.json").read_text())
    records = summary["envs"]["toy"]["records"]
    assert records["chosen"]["aggregation"] == "none"
    assert records["purchased"]["plot"] == ["purchased"]
    rows = {r["label"]: r for r in summary["results"]}
    assert rows["test-oracle-assortment"]["metrics"]["regret"]["final"]["mean"] == 0.0
    assert "20" in rows["test-random-assortment"]["metrics"]["purchased"]["checkpoints"]
    assert summary["claims"][0]["passed"] is True

    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"regret-toy.png", "revenue-toy.png", "purchased-toy.png"} <= figures
    assert "average-reward-toy.png" in figures


def test_propensity_and_actions_reach_run_result():
    env = make_env("test-toy-assortment")
    run = simulate(TestRandomAssortment(seed=1), env, 30, seed=2)
    assert len(run.actions) == 30 and all(len(a) == 2 for a in run.actions)
    assert np.allclose(run.propensities, 1 / math.comb(5, 2))
    assert run.values["chosen"].dtype == np.int64
    assert set(run.columns()) == {r.name for r in env.declared_records()}

    duel = simulate(POLICIES.make("random-duel", seed=0), ToyDuel(), 20, seed=0)
    assert duel.actions.shape == (20, 2)  # type: ignore[union-attr]
    # random-duel gives its propensity: one ordered pair of distinct arms out of K(K - 1)
    k = ToyDuel().n_arms
    assert np.allclose(duel.propensities, 1 / (k * (k - 1)))


class Undeclared(ToyDuel):
    def _step(self, ctx: Context, action: Action) -> Step:
        step = super()._step(ctx, action)
        assert step.values is not None
        return Step(
            step.feedback, step.reward, step.regret, values={**step.values, "x": 1}
        )


class Missing(ToyDuel):
    def _step(self, ctx: Context, action: Action) -> Step:
        step = super()._step(ctx, action)
        return Step(step.feedback, step.reward, step.regret)


class ListValued(ToyDuel):
    records: ClassVar[tuple[Record, ...]] = (
        Record("ranking", dtype="list<int64>", aggregation="none"),
    )


@pytest.mark.parametrize("env", [Undeclared(), Missing(), ListValued()])
def test_undeclared_or_missing_values_are_errors(env):
    with pytest.raises(ValueError, match="declares"):
        simulate(POLICIES.make("random-duel"), env, 5)


def test_claim_at_a_round_that_is_not_a_checkpoint_is_rejected(tmp_path):
    from banditkit.experiments.config.errors import ConfigError

    claim = {"id": "c", "kind": "below", "metric": "regret", "at": 30}
    claim |= {"policy": "test-oracle-duel", "other": "random-duel"}
    cfg = _config("test-toy-duel", ["random-duel", "test-oracle-duel"], claim)
    with pytest.raises(ConfigError, match="not a checkpoint"):
        run_experiment(cfg, tmp_path, backend="serial", progress="none")
    claim |= {"at": 20, "metric": "revenue"}
    with pytest.raises(ConfigError, match="declares no metric 'revenue'"):
        run_experiment(cfg, tmp_path, backend="serial", progress="none")


def test_environment_without_family_is_rejected():
    from banditkit.core import Environment

    class NoFamily(Environment):
        def _reset(self) -> None: ...

        def _next_context(self) -> None: ...

        def _step(self, ctx: Context, action: Action) -> Step: ...

    with pytest.raises(TypeError, match="family"):
        NoFamily()
