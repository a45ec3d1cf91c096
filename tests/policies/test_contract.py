"""One contract for every registered contextual policy (STYLE.md section 6.3)."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context
from tests.policies.helpers import contexts, play

# Small settings for every contextual policy; a new policy must be added here.
POLICIES_UNDER_TEST = {
    "random": {},
    "oracle": {},
    "eps-greedy": {"epsilon": 0.1},
    "linucb": {"nu": 0.5},
    "lints": {"nu": 0.2},
    "glm-ucb": {"nu": 0.5},
    "glm-ts": {"nu": 0.2},
    "neural-ucb": {"nu": 0.1, "width": 8, "update_every": 5, "steps": 10},
    "neural-ts": {"nu": 0.01, "width": 8, "update_every": 5, "steps": 10},
    "neurallog-ucb1": {
        "nu": 0.1,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ucb2": {
        "nu": 0.1,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ts1": {
        "nu": 0.01,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "neurallog-ts2": {
        "nu": 0.02,
        "width": 8,
        "update_every": 5,
        "steps": 10,
        "lr": 0.1,
    },
    "ncbf-ucb": {"nu": 0.1, "width": 8, "update_every": 5, "steps": 10, "lr": 0.1},
    "logistic-ucb1": {"nu": 0.1, "update_every": 5},
    "ada-ofu-ecolog": {"nu": 0.1, "update_every": 5},
}
LEARNERS = [n for n in POLICIES_UNDER_TEST if n not in ("random", "oracle")]


def _ctxs(n=30, k=4, d=5, seed=0):
    return contexts(n, k, d, seed, law="normal")


def test_every_registered_contextual_policy_is_under_test():
    missing = set(bk.list_policies("contextual")) - set(POLICIES_UNDER_TEST)
    assert not missing, f"add {sorted(missing)} to POLICIES_UNDER_TEST"


@pytest.mark.parametrize("name", LEARNERS)
def test_same_seed_same_actions(name):
    params = POLICIES_UNDER_TEST[name]
    ctxs = _ctxs()
    a = play(bk.make_policy(name, seed=1, **params), ctxs)
    b = play(bk.make_policy(name, seed=1, **params), ctxs)
    assert a == b
    assert all(isinstance(x, int) and 0 <= x < 4 for x in a)


@pytest.mark.parametrize("name", LEARNERS)
def test_update_leaves_inputs_untouched(name):
    policy = bk.make_policy(name, **POLICIES_UNDER_TEST[name])
    ctx = _ctxs(1)[0]
    before = ctx.arms.copy()
    policy.update(ctx, policy.act(ctx), 1.0)
    np.testing.assert_array_equal(ctx.arms, before)


@pytest.mark.parametrize("name", LEARNERS)
def test_state_dict_round_trip(name, tmp_path):
    params = POLICIES_UNDER_TEST[name]
    ctxs = _ctxs(40)
    policy = bk.make_policy(name, seed=2, **params)
    play(policy, ctxs[:25])
    path = tmp_path / "p.bk"
    bk.save_policy(policy, path)
    clone = bk.load_policy(path)
    assert type(clone) is type(policy) and clone.get_params() == policy.get_params()
    assert clone.n_updates == policy.n_updates and clone.t == policy.t
    # Same next actions and same learning from here on.
    assert play(clone, ctxs[25:], seed=7) == play(policy, ctxs[25:], seed=7)


@pytest.mark.parametrize("name", LEARNERS)
def test_state_from_other_params_is_refused(name):
    policy = bk.make_policy(name, seed=2, **POLICIES_UNDER_TEST[name])
    play(policy, _ctxs(3))
    other = bk.make_policy(name, seed=3, **POLICIES_UNDER_TEST[name])
    with pytest.raises(ValueError, match="hyper-parameters"):
        other.load_state_dict(policy.state_dict())


@pytest.mark.parametrize("name", LEARNERS)
def test_bad_input_raises(name):
    policy = bk.make_policy(name, **POLICIES_UNDER_TEST[name])
    ctx = Context(arms=np.eye(3))
    policy.act(ctx)
    with pytest.raises(ValueError, match=r"dimension 4 .* d=3"):
        policy.act(Context(arms=np.eye(4)))
    with pytest.raises(ValueError, match="out of range"):
        policy.update(ctx, 3, 1.0)
    with pytest.raises(ValueError, match="finite"):
        policy.update(ctx, 0, float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        policy.act(Context(arms=[[np.nan, 0.0, 0.0]]))
    with pytest.raises(TypeError, match="Context"):
        policy.act(np.eye(3))


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("linucb", {"nu": -1.0}),
        ("linucb", {"lam": -0.1}),
        ("lints", {"lam": 0.0}),
        ("eps-greedy", {"epsilon": 1.5}),
        ("glm-ucb", {"link": "logit"}),
        ("glm-ts", {"update_every": 0}),
        ("random", {"seed": -2}),
    ],
)
def test_invalid_hyperparameters_raise(name, bad):
    key = next(iter(bad))
    with pytest.raises(ValueError, match=key):
        bk.make_policy(name, **bad)


@pytest.mark.parametrize("name", LEARNERS)
def test_beats_uniform_play_on_an_easy_environment(name):
    env = bk.make_env("logistic", h="linear", d=5, n_arms=5)
    regret = np.mean(
        [
            bk.simulate(
                bk.make_policy(name, seed=s, **POLICIES_UNDER_TEST[name]), env, 400, s
            ).cumulative_regret[-1]
            for s in range(2)
        ]
    )
    uniform = np.mean(
        [
            bk.simulate(
                bk.make_policy("random", seed=s), env, 400, s
            ).cumulative_regret[-1]
            for s in range(2)
        ]
    )
    assert regret < 0.6 * uniform, (regret, uniform)
