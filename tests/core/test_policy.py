"""The Policy base: no default family, the family bases' validation, the horizon hand-off."""

import math
import warnings

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context, check_feedback
from banditkit.core.validation import ArgumentTypeError


class NeedsHorizon(bk.ContextualPolicy):
    """Plays arm (T mod K): a test-local policy whose rule needs the horizon T."""

    requires_horizon = True

    def _act(self, ctx):
        return self.horizon % ctx.n_arms

    def _update(self, ctx, action, feedback):
        pass


class Constant(bk.ContextualPolicy):
    def _act(self, ctx):
        return 0

    def _update(self, ctx, action, feedback):
        pass


def test_policy_without_horizon_errors_clearly():
    policy = NeedsHorizon()
    with pytest.raises(ValueError, match=r"needs the horizon: call policy\.begin"):
        policy.act(Context(arms=np.eye(3)))


def test_policy_with_horizon_uses_it():
    policy = NeedsHorizon()
    policy.begin(5)
    assert policy.act(Context(arms=np.eye(3))) == 2
    run = bk.simulate(NeedsHorizon(), bk.make_env("linear", d=2, n_arms=3), 7, seed=0)
    assert run.horizon == 7


def test_horizon_survives_a_state_dict_round_trip(tmp_path):
    policy = NeedsHorizon(seed=1)
    policy.begin(9)
    ctx = Context(arms=np.eye(4))
    policy.update(ctx, policy.act(ctx), 0.5)
    clone = NeedsHorizon(seed=1)
    clone.load_state_dict(policy.state_dict())
    assert clone.horizon == 9 and clone.act(ctx) == 1
    linucb = bk.make_policy("linucb")
    linucb.begin(13)
    bk.save_policy(linucb, tmp_path / "p.bk")
    assert bk.load_policy(tmp_path / "p.bk").horizon == 13


def test_begin_validates_and_comes_first():
    policy = Constant()
    with pytest.raises(ValueError, match="horizon"):
        policy.begin(0)
    policy.begin(None)
    assert policy.horizon is None
    ctx = Context(arms=np.eye(2))
    policy.update(ctx, policy.act(ctx), 1.0)
    with pytest.raises(ValueError, match="before the first round"):
        policy.begin(10)


def test_simulate_hands_the_horizon_over():
    policy = Constant()
    bk.simulate(policy, bk.make_env("linear", d=2, n_arms=2), 6, seed=0)
    assert policy.horizon == 6


def test_a_policy_needs_a_family():
    class NoFamily(bk.Policy):
        def _act(self, ctx):
            return 0

        def _update(self, ctx, action, feedback):
            pass

    with pytest.raises(TypeError, match="NoFamily has no family: derive it from"):
        NoFamily()
    with pytest.raises(TypeError, match="family must be one of"):

        class Wrong(bk.Policy):
            family = "bandit"

    with pytest.raises(TypeError, match="reward_kind must be one of"):

        class WrongKind(bk.ContextualPolicy):
            reward_kind = "poisson"


@pytest.mark.parametrize(
    ("base", "family"),
    [
        (bk.ContextualPolicy, "contextual"),
        (bk.DuelingPolicy, "dueling"),
        (bk.AssortmentPolicy, "assortment"),
    ],
)
def test_family_bases_set_their_family(base, family):
    assert base.family == family


@pytest.mark.parametrize("name", bk.list_policies("contextual"))
def test_declared_reward_kind_matches_the_loss(name):
    binary = {
        "glm-ucb",
        "glm-ts",
        "logistic-ucb1",
        "ada-ofu-ecolog",
        "ncbf-ucb",
        "neurallog-ucb1",
        "neurallog-ucb2",
        "neurallog-ts1",
        "neurallog-ts2",
        "kl-ucb",
        "bernoulli-ts",
        "bgle",
        "b-glincb",
        "glm-ucb-per-arm",
        "glm-ts-per-arm",
        "sklearn",  # its default learner is a classifier (SGDClassifier, log loss)
    }
    expected = "binary" if name in binary else "real"
    assert bk.make_policy(name).reward_kind == expected


def test_glm_with_identity_link_takes_real_rewards():
    policy = bk.make_policy("glm-ucb", link="identity")
    ctx = Context(arms=np.eye(2))
    policy.update(ctx, 0, 2.5)
    with pytest.raises(ValueError, match=r"feedback must be a reward in \[0, 1\]"):
        bk.make_policy("glm-ucb").update(ctx, 0, 2.5)


def test_neural_ucb_refuses_a_reward_that_would_poison_it():
    policy = bk.make_policy("neural-ucb", width=4, steps=2)
    ctx = Context(arms=np.eye(2))
    with pytest.raises(ValueError, match="max_abs_reward"):
        policy.update(ctx, 0, 1e300)
    policy.update(ctx, 0, 1.0)
    assert policy.t == 1


def test_max_abs_reward_is_overridable():
    class Large(Constant):
        max_abs_reward = 1e12

    Large().update(Context(arms=np.eye(2)), 0, 1e9)
    with pytest.raises(ValueError, match="1e\\+06"):
        Constant().update(Context(arms=np.eye(2)), 0, 1e9)


@pytest.mark.parametrize(
    ("feedback", "action", "family", "kind", "message"),
    [
        (math.nan, 0, "contextual", "real", "finite"),
        (math.inf, 0, "contextual", "binary", "finite"),
        (2.5, 0, "contextual", "binary", r"\[0, 1\]"),
        (-0.1, 0, "contextual", "binary", r"\[0, 1\]"),
        (1e7, 0, "contextual", "real", "max_abs_reward"),
        (1.0, 0, "contextual", "poisson", "unknown reward kind"),
        (0.5, (0, 1), "dueling", "real", "dueling feedback"),
        (math.nan, (0, 1), "dueling", "real", "dueling feedback"),
        (2, (0, 1), "assortment", "real", "offered item"),
        (True, (0, 1), "assortment", "real", "offered item"),
        (1.0, 0, "bandit", "real", "unknown family"),
    ],
)
def test_check_feedback_rejects(feedback, action, family, kind, message):
    with pytest.raises(ValueError, match=message):
        check_feedback(feedback, action, family, kind=kind)


def test_check_feedback_normalises():
    assert check_feedback(np.int64(1), 0, "contextual", kind="binary") == 1.0
    assert check_feedback(1.0, (1, 0), "dueling") == 1
    assert check_feedback(np.int64(2), (0, 2), "assortment") == 2
    assert check_feedback(-1, (0, 2), "assortment") == -1
    with pytest.raises(ArgumentTypeError, match="feedback must be a real reward"):
        check_feedback("1", 0, "contextual")


def test_bad_ctx_is_a_value_error_and_a_type_error():
    policy = Constant()
    with pytest.raises(ValueError, match="ctx must be a banditkit Context"):
        policy.act(np.eye(2))
    with pytest.raises(TypeError, match="Context"):
        policy.act(np.eye(2))


def test_the_experiment_runner_hands_the_horizon_over(monkeypatch):
    """The runner (and tune, which goes through it) builds runs with compute_run."""
    from banditkit.core import POLICIES
    from banditkit.experiments.compute.execute import compute_run
    from banditkit.experiments.config.resolved import RunSpec

    class Registered(NeedsHorizon):
        registry_name = "test-needs-horizon"

        def __init__(self, *, seed=0):
            super().__init__(seed=seed)

    monkeypatch.setitem(POLICIES._entries, "test-needs-horizon", Registered)
    spec = RunSpec("linear", {"d": 2, "n_arms": 3}, "test-needs-horizon", {}, 0, 5)
    record = compute_run(spec)
    assert record.error is None, record.error
    assert record.meta["rounds"] == 5


def test_a_far_shorter_horizon_than_the_defaults_need_warns():
    from banditkit.core import HorizonWarning

    with pytest.warns(HorizonWarning, match=r"blce: .*T = 10,000.*Set c or grid") as w:
        bk.make_policy("blce").begin(1000)
    assert w[0].filename == __file__  # the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bk.make_policy("blce").begin(2500)  # a quarter of the design horizon: quiet
        bk.make_policy("blce", c=0.1).begin(1000)  # adapted by the user: quiet
        bk.make_policy("blce", grid=[10, 100]).begin(1000)
        bk.make_policy("linucb").begin(10)  # no design horizon
    env = bk.make_env("rare-linear", d=3, n_arms=5)
    with pytest.warns(HorizonWarning) as w:
        bk.simulate(bk.make_policy("batchlinucb-dg"), env, 50)
    assert w[0].filename == __file__ and "Set grid for a short run" in str(w[0].message)
