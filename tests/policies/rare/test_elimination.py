"""The fast elimination cascade against a direct level-by-level evaluation."""

import math

import numpy as np
import pytest

from banditkit.core import Context
from banditkit.policies.rare import BGLE, BLCE, BLCEG
from banditkit.policies.rare.base import blce_widths
from banditkit.policies.rare.elimination import EliminationLevels
from banditkit.policies.rare.kernels import least_kept
from banditkit.policies.rare.survival import reach_bound


def direct_cascade(arms, thetas, inverses, beta):
    """The algorithm as written: every quadratic form of every surviving arm, direct inverse."""
    alive = np.arange(arms.shape[0])
    for theta, inverse in zip(thetas, inverses, strict=True):
        S = arms[alive]
        means = S @ theta
        forms = np.array([x @ inverse @ x for x in S])
        eps = math.sqrt(max(forms.max(), 0.0)) * beta(alive.size)
        alive = alive[means.max() - means <= 2.0 * eps]
    return alive


def _instance(rng, K, d, m, law, pulls):
    arms = rng.standard_normal((K, d)) if law == "normal" else rng.random((K, d))
    arms /= np.linalg.norm(arms, axis=1, keepdims=True)
    thetas, inverses = [], []
    for _ in range(m):
        X = (
            rng.standard_normal((pulls, d))
            if law == "normal"
            else rng.random((pulls, d))
        )
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        V = np.eye(d) + X.T @ X
        inverse = np.linalg.inv(V)
        thetas.append(rng.standard_normal(d) / math.sqrt(d))
        inverses.append(0.5 * (inverse + inverse.T))
    return arms, thetas, inverses


@pytest.mark.parametrize("start", ["certified", "exact"])
@pytest.mark.parametrize("law", ["uniform", "normal"])
@pytest.mark.parametrize(
    ("K", "d", "m"), [(200, 5, 1), (300, 5, 7), (150, 10, 4), (40, 2, 3)]
)
def test_survivors_equal_the_direct_cascade(law, K, d, m, start):
    # every level first tried by certificate (a level is made exact when they fail), or
    # every level evaluated exactly from the start
    rng = np.random.default_rng(K + d + m)
    beta = blce_widths(d, 8, 10_000, 1.0)
    paths = {"all survive": 0, "eliminated": 0}
    for pulls in (30, 300, 3000):
        arms, thetas, inverses = _instance(rng, K, d, m, law, pulls)
        levels = EliminationLevels(thetas, inverses)
        if start == "exact":
            levels.exact = [True] * m
        for scale in (1.0, 0.05, 0.01):  # narrower widths: more levels remove arms
            b = lambda n, s=scale: s * beta(n)  # noqa: E731
            fast = levels.survivors(arms, b)
            np.testing.assert_array_equal(
                fast, direct_cascade(arms, thetas, inverses, b)
            )
            np.testing.assert_allclose(levels.scores, np.asarray(thetas) @ arms.T)
            np.testing.assert_array_equal(levels.means, levels.scores[-1])
            assert levels.n_alive == fast.size
            paths["all survive" if fast.size == K else "eliminated"] += 1
    assert paths["eliminated"] > 0


def test_ill_conditioned_levels_are_computed_exactly():
    # cond(V^-1) ~ 1e13: no certificate is trusted, every level is evaluated directly
    rng = np.random.default_rng(4)
    d, K = 4, 100
    arms = rng.standard_normal((K, d))
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    inverse = Q @ np.diag([1e-13, 1e-3, 1.0, 1.0]) @ Q.T
    levels = EliminationLevels([rng.standard_normal(d)] * 2, [inverse] * 2)
    assert np.all(levels.shrink == 0.0)
    for s in (0.01, 0.1, 1.0):
        b = lambda n, s=s: s  # noqa: E731
        np.testing.assert_array_equal(
            levels.survivors(arms, b),
            direct_cascade(arms, [levels.thetas[0]] * 2, [inverse] * 2, b),
        )


def test_the_lower_bounds_never_exceed_the_maximum_form():
    # the projection bound l1 max <y, v_k>^2 and the exact form of the extreme arms
    rng = np.random.default_rng(5)
    for d in (2, 5, 10):
        arms, thetas, inverses = _instance(rng, 500, d, 3, "normal", 100)
        levels = EliminationLevels(thetas, inverses)
        exact = np.array(
            [np.einsum("ij,jk,ik->i", arms, M, arms).max() for M in inverses]
        )
        P = levels.top @ arms.T
        first = levels.lead * np.max(P * P, axis=1)
        assert np.all(first <= exact) and np.all(first >= 0.2 * exact)
        for k in range(3):
            pair = arms[[P[k].argmax(), P[k].argmin()]]
            second = np.einsum("jd,de,je->j", pair, inverses[k], pair).max()
            assert first[k] <= exact[k] and second * levels.shrink[k] <= exact[k]


def test_a_failed_certificate_makes_its_level_exact():
    rng = np.random.default_rng(6)
    arms, thetas, inverses = _instance(rng, 300, 5, 4, "normal", 3000)
    levels = EliminationLevels(thetas, inverses)
    beta = blce_widths(5, 8, 10_000, 1.0)
    assert not any(levels.exact)
    kept = levels.survivors(arms, beta)
    assert kept.size < 300 and any(levels.exact)  # a level removed arms
    np.testing.assert_array_equal(
        levels.survivors(arms, beta), direct_cascade(arms, thetas, inverses, beta)
    )


@pytest.mark.parametrize("cls", [BLCE, BLCEG, BGLE])
def test_policies_play_as_with_the_direct_cascade(cls, monkeypatch):
    """The same actions with the fast cascade and with the direct one (greedy, exploration)."""

    def play(policy, T=500, K=60, d=4):
        rng = np.random.default_rng(11)
        theta = rng.standard_normal(d)
        policy.begin(T)
        logistic = isinstance(policy, BGLE)
        actions = []
        for _ in range(T):
            X = rng.standard_normal((K, d))
            ctx = Context(arms=X / np.linalg.norm(X, axis=1, keepdims=True))
            a = policy.act(ctx)
            z = float(ctx.arms[a] @ theta)
            r = (
                float(rng.random() < 1 / (1 + math.exp(-z)))
                if logistic
                else z + rng.normal()
            )
            policy.update(ctx, a, r)
            actions.append(a)
        return actions

    kwargs = {"c": 0.2, "grid": [40, 100, 200, 300, 400]}
    fast = play(cls(**kwargs))

    def slow(self, arms, beta, extra=None):
        K = arms.shape[0]
        if extra is not None:
            self.forms = np.einsum("ij,jk,ik->i", arms, extra, arms)
        self._Z = self.thetas @ arms.T if self.m else np.zeros((0, K))
        if self.m:
            self.means = self._Z[-1]
        kept = (
            np.arange(K)
            if self.m == 0
            else direct_cascade(arms, list(self.thetas), list(self.inverses), beta)
        )
        self.n_alive = kept.size
        self.alive = None
        if kept.size < K:
            self.alive = np.zeros(K, dtype=bool)
            self.alive[kept] = True

    monkeypatch.setattr(EliminationLevels, "evaluate", slow)
    monkeypatch.setattr(EliminationLevels, "survives", lambda *args: False)
    assert play(cls(**kwargs)) == fast


@pytest.mark.parametrize("law", ["uniform", "normal"])
def test_an_arm_that_passes_the_survival_test_survives(law):
    rng = np.random.default_rng(7)
    beta = blce_widths(5, 8, 10_000, 1.0)
    passed = 0
    for pulls in (300, 3000):
        arms, thetas, inverses = _instance(rng, 200, 5, 4, law, pulls)
        levels = EliminationLevels(thetas, inverses)
        for scale in (1.0, 0.05):
            b = lambda n, s=scale: s * beta(n)  # noqa: E731
            kept = set(direct_cascade(arms, thetas, inverses, b).tolist())
            for i in range(200):
                if levels.survives(arms, i, b):
                    assert i in kept
                    passed += 1
    assert passed > 50


def test_extra_forms_come_with_the_cascade():
    rng = np.random.default_rng(8)
    arms, thetas, inverses = _instance(rng, 100, 4, 3, "normal", 300)
    A = np.linalg.inv(np.eye(4) + arms[:7].T @ arms[:7])
    levels = EliminationLevels(thetas, inverses)
    levels.evaluate(arms, lambda n: 0.05, A)
    np.testing.assert_allclose(levels.forms, np.einsum("ij,jk,ik->i", arms, A, arms))
    kept = direct_cascade(arms, thetas, inverses, lambda n: 0.05)
    assert levels.alive is not None and levels.n_alive == kept.size
    np.testing.assert_array_equal(np.flatnonzero(levels.alive), kept)


@pytest.mark.parametrize("law", ["uniform", "normal"])
def test_counting_the_survivors_changes_no_action(law):
    # count_survivors computes the set in every round instead of testing the pick first
    def play(count):
        policy = BLCE(grid=[30, 120, 300, 600])
        policy.count_survivors = count
        policy.begin(600)
        rng = np.random.default_rng(12)
        theta = rng.standard_normal(5)
        actions, sizes = [], []
        for _ in range(600):
            X = (
                rng.standard_normal((200, 5))
                if law == "normal"
                else rng.random((200, 5))
            )
            ctx = Context(arms=X / np.linalg.norm(X, axis=1, keepdims=True))
            a = policy.act(ctx)
            policy.update(ctx, a, float(ctx.arms[a] @ theta) + 0.1 * rng.normal())
            actions.append(a)
            sizes.append(policy.last_survivors)
        return actions, sizes

    fast, fast_sizes = play(False)
    slow, slow_sizes = play(True)
    assert fast == slow
    assert min(slow_sizes) >= 1
    if law == "normal":
        assert min(slow_sizes) < 200  # arms were removed
    assert -1 in fast_sizes  # some rounds were decided by the pick alone


def test_the_unchecked_gram_update_is_the_checked_one_bit_for_bit():
    """H's pulls skip the argument checks (``Gram.update_unchecked``): same bits, also
    across a refactorisation (every 512 updates)."""
    from banditkit.linalg import Gram

    rng = np.random.default_rng(3)
    checked, unchecked = Gram(5, 1.0), Gram(5, 1.0)
    for x in rng.uniform(-1.0, 1.0, (600, 5)):
        w = float(rng.uniform(0.1, 2.0))
        checked.update(x, w)
        unchecked.update_unchecked(x, w)
    assert np.array_equal(checked.inverse, unchecked.inverse)
    assert np.array_equal(checked.matrix, unchecked.matrix)
    assert checked.logdet == unchecked.logdet
    assert unchecked.n_updates == 600


@pytest.mark.parametrize(
    ("law", "K", "d"), [("uniform", 150, 5), ("normal", 150, 5), ("normal", 2100, 10)]
)
def test_the_staged_product_gives_the_one_product_results(law, K, d):
    # forms_first ([A; thetas] X^T, or X A and the means beyond 20,000 entries K d) then
    # evaluate: the rest of the product only
    rng = np.random.default_rng(9)
    sizes = []
    one_product = K * d <= 20_000
    for pulls, scale in ((30, 100.0), (300, 1.0), (3000, 0.05)):
        arms, thetas, inverses = _instance(rng, K, d, 5, law, pulls)
        A = np.linalg.inv(np.eye(d) + arms[:9].T @ arms[:9])
        beta = lambda n, s=scale: s * (3.0 + 0.1 * math.log(n))  # noqa: E731
        one, staged = (
            EliminationLevels(thetas, inverses),
            EliminationLevels(thetas, inverses),
        )
        splits = [[False] * 5, [True] * 5, [False, True, False, True, True]]
        for exact in splits if one_product else splits[2:]:
            one.exact, staged.exact = list(exact), list(exact)
            one.evaluate(arms, beta, A)
            means = staged.forms_first(arms, A).copy()
            forms = staged.forms.copy()
            for i in range(
                0, K, 7 if one_product else 101
            ):  # the test reads these means
                assert staged.survives(arms, i, beta, means) == one.survives(
                    arms, i, beta
                )
            staged.evaluate(arms, beta, A)
            np.testing.assert_allclose(
                means, np.stack(thetas) @ arms.T, rtol=1e-12, atol=1e-14
            )
            np.testing.assert_allclose(
                forms, np.einsum("ij,jk,ik->i", arms, A, arms), rtol=1e-12
            )
            assert np.array_equal(staged.forms, forms)
            if one_product:
                assert np.array_equal(staged.forms, one.forms)
                assert np.array_equal(staged.means, one.means)
            assert staged.n_alive == one.n_alive
            kept = direct_cascade(arms, thetas, inverses, beta)
            assert staged.n_alive == kept.size
            if staged.alive is not None:
                np.testing.assert_array_equal(np.flatnonzero(staged.alive), kept)
            sizes.append(kept.size)
    assert max(sizes) == K and min(sizes) < K  # both paths: nothing and some removed


def test_a_level_that_never_removes_removes_nothing():
    # never_removes: ||theta|| <= beta(1) sqrt(l_min(V^-1)); then no arm set loses an arm
    from banditkit.policies.rare.elimination import never_removes

    rng = np.random.default_rng(13)
    beta = blce_widths(5, 8, 10_000, 1.0)
    inert = active = 0
    for pulls in (3, 10, 30, 100, 1000):
        X = rng.standard_normal((pulls, 5))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        inverse = np.linalg.inv(np.eye(5) + X.T @ X)
        inverse = 0.5 * (inverse + inverse.T)
        for scale in (0.5, 2.0, 8.0):
            theta = scale * rng.standard_normal(5) / math.sqrt(5)
            flag = never_removes(theta, inverse, beta(1))
            lowest = np.linalg.eigvalsh(inverse)[0]
            assert flag == (
                np.linalg.norm(theta) <= beta(1) * math.sqrt(lowest) * (1 - 1e-5)
            ) or (abs(np.linalg.norm(theta) / (beta(1) * math.sqrt(lowest)) - 1) < 1e-4)
            for _ in range(20):  # arms of very different norms, some aligned with theta
                arms = rng.standard_normal((60, 5)) * rng.uniform(0.01, 10.0, (60, 1))
                arms[:3] = np.outer([-5.0, 0.1, 5.0], theta / np.linalg.norm(theta))
                kept = direct_cascade(arms, [theta], [inverse], beta)
                if flag:
                    assert kept.size == 60
                else:
                    active += kept.size < 60
            inert += flag
    assert inert >= 3 and active >= 10  # both cases occur


@pytest.mark.parametrize("cls", [BLCE, BLCEG])
def test_leaving_out_the_levels_that_never_remove_changes_no_action(cls, monkeypatch):
    def play():
        policy = cls(grid=[6, 60, 200, 500])
        policy.begin(500)
        rng = np.random.default_rng(14)
        theta = rng.standard_normal(4)
        actions = []
        for _ in range(500):
            X = rng.standard_normal((80, 4))
            ctx = Context(arms=X / np.linalg.norm(X, axis=1, keepdims=True))
            a = policy.act(ctx)
            policy.update(ctx, a, float(ctx.arms[a] @ theta) + rng.normal())
            actions.append(a)
        return actions, policy

    fast, policy = play()
    assert any(
        policy._inert(k) for k in range(len(policy.thetas))
    )  # a level was left out
    monkeypatch.setattr(cls, "_inert", lambda self, k: False)
    assert play()[0] == fast


@pytest.mark.parametrize("law", ["uniform", "normal"])
def test_the_greedy_pick_is_the_last_levels_argmax_and_survives(law):
    rng = np.random.default_rng(11)
    beta = blce_widths(5, 8, 10_000, 1.0)
    proven = 0
    for pulls in (300, 3000):
        arms, thetas, inverses = _instance(rng, 200, 5, 4, law, pulls)
        levels = EliminationLevels(thetas, inverses)
        for scale in (1.0, 0.05):
            b = lambda n, s=scale: s * beta(n)  # noqa: E731
            pick, means = levels.greedy_pick(arms, b)
            np.testing.assert_array_equal(means, np.asarray(thetas) @ arms.T)
            top = int(np.argmax(arms @ thetas[-1]))
            assert pick in (-1, top)
            assert (pick == top) == levels.survives(arms, top, b)
            if pick >= 0:
                assert pick in direct_cascade(arms, thetas, inverses, b).tolist()
                proven += 1
    assert proven >= 1


def test_the_one_comparison_threshold_is_the_comparison_as_written():
    rng = np.random.default_rng(12)
    found = 0
    for trial in range(3000):
        best = float(rng.normal() * 10.0 ** rng.integers(-5, 5))
        w = float(abs(rng.normal()) * 10.0 ** rng.integers(-8, 3))
        if trial % 3 == 0:  # best - w far below w: may give up (None)
            w = abs(best) * (1.0 + 1e-12 * rng.normal())
        c = least_kept(best, w)
        if c is None:
            continue
        found += 1
        near = [math.nextafter(c, -math.inf), c, math.nextafter(c, math.inf)]
        s = np.concatenate([near, rng.normal(best - w, abs(best - w) + w, 50)])
        np.testing.assert_array_equal(best - s <= w, s >= c)
    assert found > 2000
    assert least_kept(math.inf, 1.0) is None and least_kept(1.0, math.nan) is None


def test_the_reach_bound_bounds_every_entry():
    rng = np.random.default_rng(13)
    for scale in (1e-160, 1e-3, 1.0, 1e100):
        arms = rng.standard_normal((300, 7)) * scale
        assert reach_bound(arms) >= np.abs(arms).max()
    assert reach_bound(np.zeros((3, 2))) > 0.0
    assert reach_bound(np.full((2, 2), 1e300)) == math.inf
