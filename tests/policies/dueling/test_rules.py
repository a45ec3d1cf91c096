"""The six NVLDB pair rules against brute-force enumeration of all pairs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from banditkit.policies.dueling.rules import (
    PairRule,
    candidate_mask,
    ts_asym,
    ts_csym,
    ts_osym,
    ucb_asym,
    ucb_csym,
    ucb_osym,
)


def random_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """f (K,), a symmetric zero-diagonal b (K, K) of pair norms, a > 0."""
    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 9))
    f = rng.normal(size=K)
    if seed % 4 == 0:  # ties in f
        f = np.round(f)
    Z = rng.normal(size=(K, 3))
    b = np.sqrt(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    a = float(rng.choice([0.0, 0.3, 1.0, 5.0]))
    return f, b, a


def first_best(pairs_scores: list[tuple[tuple[int, int], float]]) -> tuple[int, int]:
    """The first pair (in the enumeration order) of largest score."""
    best, best_score = pairs_scores[0]
    for pair, score in pairs_scores[1:]:
        if score > best_score:
            best, best_score = pair, score
    return best


def brute_candidates(f, b, a):
    K = len(f)
    return [
        k for k in range(K) if all(f[k] - f[j] + a * b[k, j] >= 0 for j in range(K))
    ]


SEEDS = range(60)


@pytest.mark.parametrize("seed", SEEDS)
def test_ucb_rules_match_brute_force(seed):
    f, b, a = random_inputs(seed)
    K = len(f)
    all_pairs = list(itertools.product(range(K), range(K)))
    # ASYM: the greedy arm (first on ties), then its best optimistic competitor
    k1 = first_best([((k, k), f[k]) for k in range(K)])[0]
    k2 = first_best([((k, k), f[k] + a * b[k, k1]) for k in range(K)])[0]
    assert ucb_asym(f, b, a) == (k1, k2)
    # OSYM: every ordered pair, diagonal included
    expected = first_best([(p, f[p[0]] + f[p[1]] + a * b[p]) for p in all_pairs])
    assert ucb_osym(f, b, a) == expected
    # CSYM: the candidate pair of largest bonus
    cands = brute_candidates(f, b, a)
    assert cands, "the candidate set is never empty"
    assert list(np.flatnonzero(candidate_mask(f, b, a))) == cands
    expected = first_best([(p, b[p]) for p in itertools.product(cands, cands)])
    assert ucb_csym(f, b, a) == expected


@pytest.mark.parametrize("seed", SEEDS)
def test_ts_rules_match_brute_force(seed):
    f, b, a = random_inputs(seed)
    K = len(f)
    t = 1 + seed
    # the same draws for the vectorised rule and the loop
    z_k = np.random.default_rng(seed).standard_normal(K)
    k1 = first_best([((k, k), f[k]) for k in range(K)])[0]
    k2 = first_best([((k, k), f[k] - f[k1] + a * b[k, k1] * z_k[k]) for k in range(K)])[
        0
    ]
    assert ts_asym(f, b, a, np.random.default_rng(seed)) == (k1, k2)

    Z = np.random.default_rng(seed).standard_normal((K, K))
    pairs = list(itertools.product(range(K), range(K)))
    expected = first_best([(p, f[p[0]] + f[p[1]] + a * b[p] * Z[p]) for p in pairs])
    assert ts_osym(f, b, a, np.random.default_rng(seed)) == expected

    cands = brute_candidates(f, b, a)
    cand_pairs = list(itertools.product(cands, cands))
    listing = [(p, a * b[p] + ((a * b[p]) ** 2 / 4 + 1e-12) * Z[p]) for p in cand_pairs]
    got = ts_csym(f, b, a, t, np.random.default_rng(seed), form="listing")
    assert got == first_best(sorted(listing))
    log_term = math.log(max(K * t * t, 2))
    paper = [
        (p, b[p] ** 2 + b[p] ** 2 / (2 * math.sqrt(log_term)) * Z[p])
        for p in cand_pairs
    ]
    got = ts_csym(f, b, a, t, np.random.default_rng(seed), form="paper")
    assert got == first_best(sorted(paper))


def test_candidate_set_uses_greater_or_equal():
    # arm 1 ties exactly with arm 0 after its bonus: ">=" keeps it, ">" would not
    f = np.array([1.0, 0.5])
    b = np.array([[0.0, 0.5], [0.5, 0.0]])
    assert candidate_mask(f, b, 1.0).tolist() == [True, True]
    assert candidate_mask(f, b, 0.99).tolist() == [True, False]
    # a single candidate: the rule returns (k, k)
    assert ucb_csym(f, b, 0.5) == (0, 0)


def test_identical_arm_pairs_are_allowed():
    f = np.array([0.0, 3.0, 1.0])
    b = np.zeros((3, 3))
    # no exploration bonus: every rule plays the best arm against itself
    for exploration, rule in itertools.product(("ucb", "ts"), ("asym", "osym", "csym")):
        got = PairRule(exploration, rule, a=1.0).select(
            f, b, 1, np.random.default_rng(0)
        )
        assert got == (1, 1), (exploration, rule)


def test_ts_with_zero_a_reduces_to_greedy():
    rng = np.random.default_rng(3)
    f = rng.normal(size=6)
    Z = rng.normal(size=(6, 2))
    b = np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))
    best = int(np.argmax(f))
    assert ts_asym(f, b, 0.0, rng) == (best, best)
    assert ts_osym(f, b, 0.0, rng) == (best, best)
    assert ucb_osym(f, b, 0.0) == (best, best)


def test_exploration_picks_the_uncertain_pair():
    f = np.array([1.0, 0.9, 0.0])
    b = np.array([[0.0, 0.1, 3.0], [0.1, 0.0, 3.0], [3.0, 3.0, 0.0]])
    assert ucb_asym(f, b, 1.0) == (0, 2)
    assert ucb_osym(f, b, 1.0) == (0, 2)
    assert ucb_csym(f, b, 1.0) == (0, 2)


def test_pair_rule_validates():
    with pytest.raises(ValueError, match="rule"):
        PairRule("ucb", "bsym", a=1.0)
    with pytest.raises(ValueError, match="exploration"):
        PairRule("greedy", "asym", a=1.0)
    with pytest.raises(ValueError, match="a"):
        PairRule("ucb", "asym", a=-1.0)
    with pytest.raises(ValueError, match=r"\(K, K\)"):
        PairRule("ucb", "asym", a=1.0).select(np.zeros(3), np.zeros((2, 2)), 1, None)
    with pytest.raises(ValueError, match="NaN"):
        ucb_osym(np.array([np.nan, 0.0]), np.zeros((2, 2)), 1.0)
