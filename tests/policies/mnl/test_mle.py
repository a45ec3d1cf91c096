"""glm.fit_mnl: the linear-utility MNL likelihood and its Newton solver, against independent
computations (a per-set loop, finite differences, scipy.optimize)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from banditkit.core.transaction import snapshot
from banditkit.glm.mnl import MNLSetBuffer, MNLSets, fit_mnl, mnl_objective


def random_sets(rng, n=40, width=4, p=3, ragged=True, scale=1.0):
    Z = scale * rng.normal(size=(n, width, p))
    offset = rng.normal(size=(n, width))
    sizes = rng.integers(1, width + 1, n) if ragged else np.full(n, width)
    mask = np.arange(width)[None, :] < sizes[:, None]
    choice = np.array([int(rng.integers(-1, s)) for s in sizes])
    return MNLSets(Z, offset, mask, choice)


def loop_objective(sets, w, lam, c):
    """The NLL set by set, with the outside option as utility 0 (independent of the module)."""
    total = 0.5 * lam * float((w - c) @ (w - c))
    for s in range(sets.Z.shape[0]):
        k = int(sets.mask[s].sum())
        u = np.concatenate([[0.0], sets.Z[s, :k] @ w + sets.offset[s, :k]])
        log_p = u - np.log(np.exp(u).sum())
        total -= log_p[sets.choice[s] + 1]
    return total


def test_value_matches_a_per_set_loop():
    rng = np.random.default_rng(0)
    sets = random_sets(rng)
    w, c = rng.normal(size=3), rng.normal(size=3)
    value, _, _ = mnl_objective(sets, w, lam=0.7, center=c)
    assert value == pytest.approx(loop_objective(sets, w, 0.7, c), rel=1e-12)


def test_gradient_and_hessian_equal_finite_differences():
    rng = np.random.default_rng(1)
    sets = random_sets(rng)
    w, c = rng.normal(size=3), rng.normal(size=3)
    _, grad, hess = mnl_objective(sets, w, lam=0.3, center=c)
    h = 1e-6
    eye = np.eye(3)
    fd_grad = [
        (
            loop_objective(sets, w + h * e, 0.3, c)
            - loop_objective(sets, w - h * e, 0.3, c)
        )
        / (2 * h)
        for e in eye
    ]
    np.testing.assert_allclose(grad, fd_grad, rtol=1e-6, atol=1e-7)
    fd_hess = np.array(
        [
            (
                mnl_objective(sets, w + h * e, lam=0.3, center=c)[1]
                - mnl_objective(sets, w - h * e, lam=0.3, center=c)[1]
            )
            / (2 * h)
            for e in eye
        ]
    )
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, hess.T, atol=1e-12)


def test_the_outside_option_enters_the_gradient():
    # a set where nothing was bought: the gradient is sum_i p_i z_i, not 0
    sets = MNLSets(
        np.ones((1, 2, 1)), np.zeros((1, 2)), np.ones((1, 2), bool), np.array([-1])
    )
    _, grad, _ = mnl_objective(sets, np.zeros(1), lam=0.0)
    assert grad[0] == pytest.approx(2 / 3)


@pytest.mark.parametrize("lam", [0.1, 10.0, 1000.0])
def test_newton_reaches_the_scipy_optimum(lam):
    rng = np.random.default_rng(2)
    sets = random_sets(rng, n=60, p=4, scale=2.0)
    c = rng.normal(size=4)
    fit = fit_mnl(sets, lam=lam, center=c)
    ref = minimize(
        lambda w: loop_objective(sets, w, lam, c),
        c,
        method="BFGS",
        options={"gtol": 1e-10},
    )
    assert fit.grad_norm <= 1e-6 * max(1.0, lam)
    np.testing.assert_allclose(fit.w, ref.x, atol=1e-5)
    assert loop_objective(sets, fit.w, lam, c) <= ref.fun + 1e-9


def test_warm_start_converges_in_few_steps_and_to_the_same_point():
    rng = np.random.default_rng(3)
    sets = random_sets(rng, n=80, p=3)
    cold = fit_mnl(sets, lam=5.0)
    more = MNLSets(
        *(
            np.concatenate([a, b])
            for a, b in zip(sets, random_sets(rng, n=1, p=3), strict=False)
        )
    )
    warm = fit_mnl(more, lam=5.0, w0=cold.w)
    again = fit_mnl(more, lam=5.0)
    assert warm.iterations <= 3
    np.testing.assert_allclose(warm.w, again.w, atol=1e-7)


def test_fit_mnl_validates():
    sets = random_sets(np.random.default_rng(4), n=3)
    with pytest.raises(ValueError, match="lam"):
        fit_mnl(sets, lam=-1.0)
    with pytest.raises(ValueError, match="offset"):
        fit_mnl(sets._replace(offset=np.zeros((2, 2))), lam=1.0)


def test_set_buffer_grows_and_restores():
    rng = np.random.default_rng(5)
    buf, sizes = MNLSetBuffer(3), [2, 1, 4, 3] * 5
    for k in sizes:
        buf.append(
            rng.normal(size=(k, 3)), rng.normal(size=k), int(rng.integers(-1, k))
        )
    sets = buf.sets
    assert sets.Z.shape == (20, 4, 3) and sets.mask.sum(axis=1).tolist() == sizes
    assert np.all(sets.Z[~sets.mask] == 0)
    copy = MNLSetBuffer(3)
    copy.load_state_dict(buf.state_dict())
    for a, b in zip(copy.sets, sets, strict=True):
        np.testing.assert_array_equal(a, b)
    copy.append(np.ones((5, 3)), np.zeros(5), 4)
    assert copy.sets.Z.shape == (21, 5, 3) and buf.sets.Z.shape == (20, 4, 3)


def test_a_lagged_hessian_reaches_the_same_optimum():
    rng = np.random.default_rng(6)
    sets = random_sets(rng, n=100, p=5, scale=1.5)
    exact = fit_mnl(sets, lam=2.0)
    stale = fit_mnl(
        sets, lam=2.0, w0=exact.w + 0.3, return_hessian=True
    )  # H at a far point
    lagged = fit_mnl(sets, lam=2.0, w0=exact.w + 0.05, hessian=stale.hessian)
    assert lagged.grad_norm <= 2e-6
    np.testing.assert_allclose(lagged.w, exact.w, atol=1e-6)
    # a useless matrix (a huge multiple of I) still converges: the exact Hessian takes over
    slow = fit_mnl(sets, lam=2.0, w0=exact.w + 0.05, hessian=1e6 * np.eye(5))
    np.testing.assert_allclose(slow.w, exact.w, atol=1e-6)


@pytest.mark.parametrize("solver", ["newton", "lagged"])
def test_onl_mnl_solvers_agree(solver):
    import banditkit as bk

    env = bk.make_env("mnl", d=2, n_items=6, capacity=2)
    runs = {}
    for s in ("newton", solver):
        policy = bk.make_policy(
            "onl-mnl", width=2, t0=5, pilot_steps=20, solver=s, seed=0
        )
        bk.simulate(policy, env, horizon=40, seed=0)
        runs[s] = policy.net.w
    np.testing.assert_allclose(runs[solver], runs["newton"], atol=1e-6)


def test_newton_does_not_stall_when_the_decrease_is_below_rounding(monkeypatch):
    """Near the optimum of a long sum the predicted Armijo decrease is below the rounding
    of L: a value that comes out a few ulps higher must not stop the step (in a UCB-MNL
    run this halved the step 34 times per iteration and stalled until max_iter)."""
    import banditkit.glm.mnl as mnl

    rng = np.random.default_rng(7)
    sets = random_sets(rng, n=400, width=5, p=3, scale=0.5)
    opt = fit_mnl(sets, lam=1.0, tol=1e-12)
    _, _, hess = mnl_objective(sets, opt.w, lam=1.0)
    start = opt.w + np.linalg.solve(hess, np.full(3, 2e-6))  # gradient ~3.5e-6
    exact = mnl._value_grad
    calls = []

    def rounded_up(
        sets, w, lam, c, layout=None
    ):  # every value after the first: 8 ulps high
        value, grad, p = exact(sets, w, lam, c, layout)
        calls.append(1)
        return value + 8 * len(calls[1:]) * np.spacing(value), grad, p

    monkeypatch.setattr(mnl, "_value_grad", rounded_up)
    fit = fit_mnl(sets, lam=1.0, w0=start, tol=1e-6, max_iter=20)
    assert fit.grad_norm <= 1e-6 and fit.iterations == 1 and len(calls) == 2
    monkeypatch.setattr(mnl, "_VALUE_NOISE", 0.0)  # no slack: the step is halved away
    calls.clear()
    fit_mnl(sets, lam=1.0, w0=start, tol=1e-6, max_iter=3)
    assert len(calls) > 30


def test_refit_from_the_previous_value_and_gradient_is_the_same_solve():
    """refit_mnl(previous=(value, grad)) skips one pass; the solve, value and gradient
    equal a refit without it and the objective computed afresh."""
    from banditkit.glm.mnl import MNLSetBuffer, refit_mnl

    rng = np.random.default_rng(3)
    sets = random_sets(rng, n=60, width=4, p=3, ragged=False)
    buf = MNLSetBuffer(3)
    w, hess, prev = np.zeros(3), np.eye(3), (0.0, np.zeros(3))
    for s in range(60):
        buf.append(sets.Z[s], sets.offset[s], int(sets.choice[s]))
        plain = refit_mnl(buf.sets, n_new=1, hessian=hess, lam=1.0, w0=w)
        fast = refit_mnl(buf.sets, n_new=1, hessian=hess, lam=1.0, w0=w, previous=prev)
        np.testing.assert_allclose(fast.w, plain.w, atol=1e-8)
        value, grad, _ = mnl_objective(buf.sets, fast.w, lam=1.0)
        assert fast.value == pytest.approx(value, rel=1e-10)
        np.testing.assert_allclose(fast.grad, grad, atol=1e-9)
        w, hess, prev = fast.w, fast.hessian, (fast.value, fast.grad)


def test_one_appended_set_terms_equal_the_objective_of_that_set():
    """refit_mnl's fast path for one new set: value, gradient and Hessian as mnl_objective."""
    from banditkit.glm.mnl import _one_set

    rng = np.random.default_rng(11)
    sets = random_sets(rng, n=30, width=5, p=3)
    for s in range(30):
        one = MNLSets(*(a[s : s + 1] for a in sets))
        w = rng.normal(size=3)
        value, grad, hess = _one_set(one, w)
        ref_value, ref_grad, ref_hess = mnl_objective(one, w, lam=0.0)
        assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hess, ref_hess, rtol=1e-10, atol=1e-12)


def test_round_by_round_refits_stay_at_the_scipy_optimum():
    """The UCB-MNL refit (lagged Newton, previous value and gradient, one set a round)
    meets the tolerance every round and equals the optimum scipy.optimize finds."""
    from banditkit.glm.mnl import MNLSetBuffer, refit_mnl

    rng = np.random.default_rng(5)
    sets = random_sets(rng, n=150, width=5, p=3, ragged=False, scale=0.6)
    buf = MNLSetBuffer(3)
    w, hess, prev = np.zeros(3), np.eye(3), (0.0, np.zeros(3))
    for s in range(150):
        buf.append(sets.Z[s], np.zeros(5), int(sets.choice[s]))
        fit = refit_mnl(buf.sets, n_new=1, hessian=hess, lam=1.0, w0=w, previous=prev)
        w, hess, prev = fit.w, fit.hessian, (fit.value, fit.grad)
        assert fit.grad_norm <= 1e-6
        if s in (9, 149):
            plain = MNLSets(
                buf.sets.Z, np.zeros((s + 1, 5)), buf.sets.mask, buf.sets.choice
            )
            ref = minimize(
                lambda v, plain=plain: loop_objective(plain, v, 1.0, np.zeros(3)),
                np.zeros(3),
                method="BFGS",
                options={"gtol": 1e-10},
            )
            np.testing.assert_allclose(w, ref.x, atol=1e-6)
            # the carried value and gradient are those of the objective at the estimate
            value, grad, _ = mnl_objective(buf.sets, w, lam=1.0)
            assert fit.value == pytest.approx(value, rel=1e-12)
            np.testing.assert_allclose(fit.grad, grad, atol=1e-9)


@pytest.mark.parametrize("n_sets", [0, 3, 8])  # fresh, mid-buffer, growing the rows
@pytest.mark.parametrize("failed_size", [2, 5])  # within the width, widening it
def test_an_undone_append_leaves_the_set_buffer_as_a_twin(n_sets, failed_size):
    """snapshot, append, restore, append a smaller set: as a buffer that never failed."""
    rng = np.random.default_rng(9)
    buf, twin = MNLSetBuffer(3), MNLSetBuffer(3)
    for _ in range(n_sets):
        Z, offset = rng.normal(size=(3, 3)), rng.normal(size=3)
        buf.append(Z, offset, 1)
        twin.append(Z, offset, 1)
    saved = snapshot(buf)
    buf.append(np.ones((failed_size, 3)), np.ones(failed_size), failed_size - 1)
    saved.restore()
    Z, offset = rng.normal(size=(1, 3)), rng.normal(size=1)
    buf.append(Z, offset, -1)
    twin.append(Z, offset, -1)
    width = twin.sets.Z.shape[1]
    for a, b in zip(buf.sets, twin.sets, strict=True):
        np.testing.assert_array_equal(a[:, :width] if a.ndim > 1 else a, b)
    assert not buf.sets.mask[:, width:].any()
