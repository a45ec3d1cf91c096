"""A missing optional dependency is a named skip; a user's policy counts its updates."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np

import banditkit as bk
from banditkit.testing import check_policy


class First(bk.ContextualPolicy):
    """A user's policy: the arm with the largest first feature; counts nothing itself."""

    def _act(self, ctx):
        return int(np.argmax(ctx.arms[:, 0]))

    def _update(self, ctx, action, feedback):
        pass


WITHOUT_HYPOTHESIS = textwrap.dedent(
    """
    import sys, unittest, warnings
    sys.modules["hypothesis"] = None  # a fresh install without the testing extra
    import numpy as np
    import banditkit as bk
    from banditkit.testing import PolicyContract, check_policy

    class First(bk.ContextualPolicy):
        def _act(self, ctx):
            return int(np.argmax(ctx.arms[:, 0]))
        def _update(self, ctx, action, feedback):
            pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_policy(First)  # the other contracts run and pass: no AssertionError
    for w in caught:
        print("warning:", w.filename, w.message)

    class TestFirst(PolicyContract):
        policy_class = First
    try:
        TestFirst().test_fuzz()
    except unittest.SkipTest as exc:
        print("skip:", exc)
    """
)


def test_without_hypothesis_fuzz_is_a_skip_naming_the_install_command():
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_HYPOTHESIS],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = proc.stdout.splitlines()
    (warning,) = [line for line in lines if line.startswith("warning:")]
    assert warning.startswith("warning: <string> ")  # the user's line, not banditkit's
    assert "contract 'fuzz' skipped" in warning
    assert "pip install 'banditkit[testing]'" in warning
    (skip,) = [line for line in lines if line.startswith("skip:")]
    assert "pip install 'banditkit[testing]'" in skip


def test_with_hypothesis_nothing_is_skipped():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_policy(First, skip={"save_restore"})


def test_a_users_policy_counts_one_update_per_round():
    run = bk.simulate(First(), bk.make_env("linear", d=2, n_arms=3), 6)
    np.testing.assert_array_equal(run.n_updates, np.arange(1, 7))


def test_a_policy_that_counts_its_own_refits_is_left_alone():
    class EveryThird(First):
        counts_updates = True

        def _update(self, ctx, action, feedback):
            if self.t % 3 == 2:
                self._n_updates += 1

    run = bk.simulate(EveryThird(), bk.make_env("linear", d=2, n_arms=3), 6)
    np.testing.assert_array_equal(run.n_updates, [0, 0, 1, 1, 1, 2])


def test_builtin_counts_are_unchanged():
    """banditkit's own policies count their re-estimations: random makes none."""
    env = bk.make_env("linear", d=2, n_arms=3)
    assert bk.simulate(bk.make_policy("random"), env, 5).n_updates[-1] == 0
    assert bk.simulate(bk.make_policy("linucb"), env, 5).n_updates[-1] == 5
