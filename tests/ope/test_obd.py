"""OPE on the Open Bandit Dataset sample: the uniform-random policy evaluated on the BTS log."""

import numpy as np
import pytest

from banditkit import ope
from banditkit.datasets import load_obd
from tests.datasets._data import require_reference_data, use_reference_data


@pytest.fixture(autouse=True)
def _data(monkeypatch):
    require_reference_data("obd")
    use_reference_data(monkeypatch)


def test_obd_log_arrays():
    log = ope.obd_log(load_obd("bts", "all"))
    assert log.n == 10_000 and log.n_actions == 80
    assert log.actions.min() >= 0 and log.actions.max() < 80
    assert np.all((log.propensities > 0) & (log.propensities <= 1))
    assert set(np.unique(log.rewards)) <= {0.0, 1.0}
    assert set(np.unique(log.positions)) == {1, 2, 3}
    assert log.features is not None and log.features.shape[0] == 10_000
    np.testing.assert_allclose(
        log.features[:, -3:].sum(axis=1), 1.0
    )  # position one-hot
    np.testing.assert_allclose(log.uniform_target().sum(axis=1), 1.0)


def test_uniform_random_policy_on_the_bts_log_matches_the_random_logs_click_rate():
    """The quality bar: IPS, SNIPS and DR intervals contain the on-policy CTR (campaign all)."""
    estimates, reference = ope.obd_uniform_check("all", methods=("ips", "snips", "dr"))
    assert reference.value == pytest.approx(
        0.0038
    )  # 38 clicks in 10,000 random impressions
    for name, e in estimates.items():
        assert e.n == 10_000
        assert e.contains(reference.value), (name, e, reference)
        assert e.ci[1] - e.ci[0] < 0.005, (name, e)  # informative, not vacuous
    table = ope.format_estimates(estimates, reference)
    assert "NO" not in table and "reference" in table


def test_evaluate_command_on_obd_shows_the_reference():
    text = ope.evaluate_command(campaign="all")
    assert text.startswith(
        "OBD campaign 'all': BTS log, n = 10000, K = 80\ntarget uniform\n"
    )
    assert "reference   0.0038" in text and "NO" not in text


@pytest.mark.parametrize("wrong", ["bts", ("bts", "all"), None])
def test_obd_log_names_the_new_call_for_anything_but_a_loaded_log(wrong):
    with pytest.raises(TypeError, match=r"obd_log\(load_obd\('bts', 'all'\)\)"):
        ope.obd_log(wrong)
