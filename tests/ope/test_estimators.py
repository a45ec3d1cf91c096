"""The estimators of banditkit.ope: hand computations, validation, and interval coverage."""

import math
import statistics

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from banditkit import ope

# A tiny log, K = 2, and its hand-computed quantities:
#   w   = target[i, a_i] / p_i = [1/0.5, 0.5/0.25, 1/0.75, 0.2/0.5] = [2, 2, 4/3, 0.4]
#   w r = [2, 0, 4/3, 0.2]
REWARDS = [1.0, 0.0, 1.0, 0.5]
ACTIONS = [0, 1, 1, 0]
PROPENSITIES = [0.5, 0.25, 0.75, 0.5]
TARGET = [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.2, 0.8]]
Q = [[0.5, 0.2], [0.1, 0.3], [0.4, 0.6], [0.9, 0.0]]
LOG = {
    "rewards": REWARDS,
    "actions": ACTIONS,
    "propensities": PROPENSITIES,
    "target": TARGET,
}
Z95 = 1.959963984540054


def test_ips_equals_the_hand_computation():
    e = ope.ips(**LOG)
    terms = [2.0, 0.0, 4 / 3, 0.2]
    assert e.value == pytest.approx(53 / 60)  # (2 + 0 + 4/3 + 0.2) / 4
    assert e.std_error == pytest.approx(statistics.stdev(terms) / 2)
    assert e.ci == pytest.approx(
        (53 / 60 - Z95 * e.std_error, 53 / 60 + Z95 * e.std_error)
    )
    assert (e.n, e.method, e.level) == (4, "ips", 0.95)


def test_snips_equals_the_hand_computation_with_the_delta_method_interval():
    e = ope.snips(**LOG)
    value = 53 / 86  # (53/15) / (2 + 2 + 4/3 + 0.4 = 86/15)
    assert e.value == pytest.approx(value)
    w, r = [2.0, 2.0, 4 / 3, 0.4], REWARDS
    z = [wi * (ri - value) / (86 / 60) for wi, ri in zip(w, r, strict=True)]
    assert e.std_error == pytest.approx(statistics.stdev(z) / 2)


def test_dm_and_dr_equal_the_hand_computation():
    dm = ope.dm(target=TARGET, q=Q)
    assert dm.value == pytest.approx((0.5 + 0.2 + 0.6 + 0.18) / 4)
    dr = ope.dr(**LOG, q=Q)
    # dm_i + w_i (r_i - q[i, a_i]): 0.5 + 1, 0.2 - 0.6, 0.6 + 0.4 * 4/3, 0.18 - 0.16
    terms = [1.5, -0.4, 0.6 + 1.6 / 3, 0.02]
    assert dr.value == pytest.approx(sum(terms) / 4)
    assert dr.std_error == pytest.approx(statistics.stdev(terms) / 2)
    assert ope.direct_method is ope.dm and ope.doubly_robust is ope.dr


def test_dr_with_a_perfect_reward_model_of_a_deterministic_log_is_exact():
    q = np.array(Q)
    rewards = q[np.arange(4), ACTIONS]
    e = ope.dr(**{**LOG, "rewards": rewards}, q=q)
    assert e.value == pytest.approx(ope.dm(target=TARGET, q=q).value)


def test_level_widens_the_interval():
    narrow, wide = ope.ips(**LOG, level=0.5), ope.ips(**LOG, level=0.99)
    assert narrow.value == wide.value
    assert wide.ci[1] - wide.ci[0] > narrow.ci[1] - narrow.ci[0]
    assert wide.ci[1] - wide.value == pytest.approx(2.5758293 * wide.std_error)


def test_estimate_is_frozen_and_prints_its_interval():
    e = ope.ips(**LOG)
    with pytest.raises(AttributeError):
        e.value = 0.0  # type: ignore[misc]
    assert str(e).startswith("ips: 0.8833 (95% CI")
    assert e.contains(e.value) and not e.contains(e.ci[1] + 1)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"rewards": [1.0, 0.0, math.nan, 0.5]}, "rewards"),
        ({"rewards": [1.0, 0.0, 1.0]}, "rewards"),
        ({"actions": [0, 1, 2, 0]}, "actions"),
        ({"actions": [0, 1, -1, 0]}, "actions"),
        ({"actions": [0, 1, 0.5, 0]}, "actions"),
        ({"propensities": [0.5, 0.0, 0.75, 0.5]}, "propensities"),
        ({"propensities": [0.5, 1.5, 0.75, 0.5]}, "propensities"),
        ({"propensities": [0.5, math.nan, 0.75, 0.5]}, "propensities"),
        ({"target": [[1.0, 0.0], [0.5, 0.4], [0.0, 1.0], [0.2, 0.8]]}, "target"),
        ({"target": [[1.0, 0.0], [1.5, -0.5], [0.0, 1.0], [0.2, 0.8]]}, "target"),
        ({"target": [1.0, 0.0, 1.0, 0.5]}, "target"),
        ({"level": 1.0}, "level"),
    ],
)
@pytest.mark.parametrize("estimator", [ope.ips, ope.snips])
def test_bad_input_raises_a_value_error_naming_the_argument(estimator, change, name):
    with pytest.raises(ValueError, match=name):
        estimator(**{**LOG, **change})


def test_reward_model_arguments_are_checked():
    with pytest.raises(ValueError, match="q"):
        ope.dr(**LOG, q=[[0.5, 0.2]])
    with pytest.raises(ValueError, match="exactly one of q"):
        ope.dr(**LOG)
    with pytest.raises(ValueError, match="exactly one of q"):
        ope.dr(**LOG, q=Q, regressor=LinearRegression())
    with pytest.raises(ValueError, match="contexts"):
        ope.dr(**LOG, regressor=LinearRegression())
    with pytest.raises(ValueError, match="rewards and actions"):
        ope.dm(target=TARGET, regressor=LinearRegression(), features=np.zeros((4, 1)))
    with pytest.raises(ValueError, match="target"):
        ope.dm(target=[[0.5, 0.6], [0.5, 0.5]], q=[[0.0, 0.0], [0.0, 0.0]])


# --- unbiasedness and coverage on simulated logs of known policies ----------------------

# Three context values x, K = 3; expected rewards, logging and target policies per x.
MU = np.array([[0.2, 0.5, 0.8], [0.6, 0.3, 0.1], [0.4, 0.4, 0.9]])
LOGGING = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.4, 0.4, 0.2]])
TARGET_POLICY = np.array([[0.1, 0.1, 0.8], [0.8, 0.1, 0.1], [0.2, 0.2, 0.6]])
TRUE_VALUE = float((TARGET_POLICY * MU).sum(axis=1).mean())  # x is uniform


def _simulated_log(rng, n):
    x = rng.integers(3, size=n)
    u = rng.random(n)
    actions = (u[:, None] > LOGGING[x].cumsum(axis=1)).sum(axis=1)
    rewards = (rng.random(n) < MU[x, actions]).astype(float)
    return x, {
        "rewards": rewards,
        "actions": actions,
        "propensities": LOGGING[x, actions],
        "target": TARGET_POLICY[x],
    }


def _coverage(estimates):
    values = np.array([e.value for e in estimates])
    inside = np.mean([e.contains(TRUE_VALUE) for e in estimates])
    bias_se = values.std(ddof=1) / np.sqrt(values.size)
    return inside, abs(values.mean() - TRUE_VALUE) / bias_se


@pytest.mark.parametrize("method", ["ips", "snips", "dr-fixed-q"])
def test_the_true_value_is_inside_the_95_interval_in_about_95_percent_of_logs(method):
    rng = np.random.default_rng(20261125)
    wrong_q = np.full((3, 3), 0.5)  # any fixed q keeps DR unbiased
    estimates = []
    for _ in range(400):
        x, log = _simulated_log(rng, 300)
        if method == "ips":
            estimates.append(ope.ips(**log))
        elif method == "snips":
            estimates.append(ope.snips(**log))
        else:
            estimates.append(ope.dr(**log, q=wrong_q[x]))
    inside, bias_in_se = _coverage(estimates)
    assert 0.92 <= inside <= 0.98, inside  # 400 repetitions: sd of the rate about 0.011
    if method != "snips":  # SNIPS is biased by O(1/n)
        assert bias_in_se < 3.0


def test_cross_fitted_dr_covers_the_true_value():
    rng = np.random.default_rng(7)
    estimates = []
    for _ in range(150):
        x, log = _simulated_log(rng, 300)
        estimates.append(
            ope.dr(**log, regressor=LinearRegression(), features=np.eye(3)[x])
        )
    inside, bias_in_se = _coverage(estimates)
    assert 0.90 <= inside <= 0.99, inside
    assert bias_in_se < 3.0
    # the reward model lowers the variance below that of IPS on the same log
    x, log = _simulated_log(rng, 3000)
    dr = ope.dr(**log, regressor=LinearRegression(), features=np.eye(3)[x])
    assert dr.std_error < ope.ips(**log).std_error


def test_dm_with_a_fitted_well_specified_model_is_close_to_the_truth():
    rng = np.random.default_rng(11)
    x, log = _simulated_log(rng, 4000)
    pairs = np.eye(9)[x[:, None] * 3 + np.arange(3)]  # one-hot (x, action): exact model
    e = ope.dm(
        target=log["target"],
        regressor=LinearRegression(),
        rewards=log["rewards"],
        actions=log["actions"],
        contexts=pairs,
    )
    assert abs(e.value - TRUE_VALUE) < 0.03
    assert e.method == "dm" and e.n == 4000
