import numpy as np
import pytest

from banditkit.policies.parts.selection import (
    Optimistic,
    RadiusRange,
    Sampled,
    argmax_random_tie,
    gaussian_sample,
    optimistic_argmax,
)


def test_optimistic_argmax_hand_checked():
    assert optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=1.0) == 1
    assert optimistic_argmax(np.array([0.5, 0.2]), np.array([0.1, 1.0]), nu=0.0) == 0


def test_ties_are_broken_uniformly():
    rng = np.random.default_rng(0)
    picks = [
        argmax_random_tie(np.array([1.0, 0.0, 1.0, 1.0]), rng) for _ in range(3000)
    ]
    counts = np.bincount(picks, minlength=4)
    assert counts[1] == 0
    # 3000 draws over 3 tied arms: each count ~ Binomial(3000, 1/3), sd ~ 26; allow 5 sd.
    assert np.all(np.abs(counts[[0, 2, 3]] - 1000) < 130)


def test_gaussian_sample_frequencies():
    """Two arms, means 0 and 0.5, widths 1 and nu=1: P(arm 1) = Phi(0.5 / sqrt(2)) = 0.638."""
    rng = np.random.default_rng(1)
    n = 4000
    wins = sum(
        gaussian_sample(np.array([0.0, 0.5]), np.ones(2), 1.0, rng) for _ in range(n)
    )
    # sd of the frequency ~ sqrt(0.64 * 0.36 / 4000) = 0.0076; tolerance 4 sd.
    assert abs(wins / n - 0.638) < 0.03


@pytest.mark.parametrize("rule", [Optimistic(), Sampled(), Optimistic(1e-12)])
def test_a_known_radius_selects_as_select_with_its_widths(rule) -> None:
    """select_bracketed at a known B: the choice (and draws) of select(nu B norms)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        mean, norms = rng.standard_normal(5), rng.random(5)
        nu, radius = rng.random(), rng.random() * 3
        seed = int(rng.integers(1000))
        got = rule.select_bracketed(
            mean, norms, RadiusRange.known(nu, radius), np.random.default_rng(seed)
        )
        width = (nu * radius) * norms
        assert got == rule.select(mean, width, np.random.default_rng(seed))


def test_bounds_decide_without_reading_the_radius_when_they_can() -> None:
    mean, norms = np.array([1.0, 0.0, 0.2]), np.array([0.1, 0.2, 0.1])
    unread = RadiusRange(1.0, 1.0, 2.0, True, lambda: pytest.fail("read B(d_eff)"))
    assert Optimistic().select_bracketed(mean, norms, unread, None) == 0
    close = RadiusRange(1.0, 1.0, 20.0, True, lambda: 12.0)  # 0 wins at 1, 1 at 20
    expected = Optimistic().select(mean, 12.0 * norms, None)
    assert Optimistic().select_bracketed(mean, norms, close, None) == expected == 1


def _beliefs(rng, kind):
    """Means and widths (K,) with exact ties, ties within TIE_RTOL, infinities, or none."""
    k = int(rng.integers(1, 7))
    mean, width = rng.normal(size=k), rng.random(k)
    if kind == "exact ties" and k > 1:
        mean[:] = np.round(mean, 0)
        width[:] = 0.5
    elif kind == "rounding ties" and k > 1:
        width[:] = 0.0
        mean[:] = 0.3
        mean[: k // 2] += 1e-16 * (1 + np.arange(k // 2))
    elif kind == "infinite":
        width[int(rng.integers(k))] = np.inf
    return mean, width


@pytest.mark.parametrize("kind", ["plain", "exact ties", "rounding ties", "infinite"])
@pytest.mark.parametrize("rtol", [0.0, 1e-12])
def test_decide_is_select_then_law(kind, rtol):
    """The fused path of an exact rule: the same action, draws and law as the two calls."""
    from banditkit.policies.parts.selection import Greedy

    rng = np.random.default_rng(42)
    for rule in (Optimistic(rtol), Greedy()):
        rule.rtol = rtol
        for _ in range(300):
            mean, width = _beliefs(rng, kind)
            seed = int(rng.integers(2**31))
            for stream in (None, "rng"):
                a = None if stream is None else np.random.default_rng(seed)
                b = None if stream is None else np.random.default_rng(seed)
                action, law = rule.decide(mean, width, a)
                chosen = rule.select(mean, width, b)
                expected = rule.law(mean, width, chosen)
                assert action == chosen
                assert np.array_equal(law.probs, expected.probs)
                if stream is not None:  # the same draws were taken
                    assert a.integers(2**31) == b.integers(2**31)


def test_decide_refuses_nan_scores_as_select_does():
    with pytest.raises(ValueError, match="NaN"):
        Optimistic().decide(np.array([0.1, np.nan]), np.zeros(2), None)
