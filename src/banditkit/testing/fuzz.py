"""The fuzz contract: a few hundred rounds of random valid input, no exception, no NaN.

It needs ``hypothesis``, imported when the contract runs (not when ``banditkit.testing`` is
imported): install it with ``pip install "banditkit[testing]"``.
"""

from __future__ import annotations

from typing import Any

from banditkit.testing.harness import (
    ContractSkipped,
    PolicyCase,
    assert_finite_state,
    play,
    start,
)

__all__ = ["check_fuzz"]


#: Norms of the arm vectors the fuzz contract draws by default (0: every arm is zero).
ARM_SCALES: tuple[float, ...] = (0.0, 1e-3, 0.5, 1.0)
#: Noise levels of real rewards it draws by default.
REWARD_SCALES: tuple[float, ...] = (0.0, 1.0, 10.0)


def check_fuzz(
    case: PolicyCase,
    *,
    max_examples: int = 10,
    max_rounds: int = 50,
    arm_scales: tuple[float, ...] = ARM_SCALES,
    reward_scales: tuple[float, ...] = REWARD_SCALES,
) -> None:
    """Play random valid scripted instances; every action valid, the state stays finite.

    Hypothesis draws each instance: the seeds, K in {1, 2, 3, 7, 30}, d in [1, 4], the norm
    of the arm vectors (``arm_scales``; the papers' regime ||x|| <= 1 by default),
    duplicated arms (exact ties), the noise of real rewards (``reward_scales``), the
    capacity of an assortment and the number of rounds (the horizon handed to ``begin``).
    The draws are derandomised, so a failure reproduces.

    Args:
        case: The policy under test.
        max_examples: Instances to play (about ``max_examples * max_rounds / 2`` rounds).
        max_rounds: Most rounds per instance.
        arm_scales: Arm norms to draw from.
        reward_scales: Reward noise levels to draw from (contextual, real rewards).

    Raises:
        AssertionError: An invalid action, an exception in the policy, or NaN/inf in its
            state dict; the message holds the failing instance.
        ContractSkipped: If hypothesis is not installed (a ``unittest.SkipTest`` naming
            the install command).
    """
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError as exc:
        raise ContractSkipped(
            "the fuzz contract needs hypothesis: pip install 'banditkit[testing]'."
        ) from exc

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        seed=st.integers(0, 2**16),
        env_seed=st.integers(0, 2**16),
        n_arms=st.sampled_from([1, 2, 3, 7, 30]),
        d=st.integers(1, 4),
        arm_scale=st.sampled_from(arm_scales),
        duplicate_arms=st.booleans(),
        reward_scale=st.sampled_from(reward_scales),
        max_size=st.integers(1, 3),
        rounds=st.integers(1, max_rounds),
    )
    def run(
        seed: int,
        env_seed: int,
        n_arms: int,
        d: int,
        arm_scale: float,
        duplicate_arms: bool,
        reward_scale: float,
        max_size: int,
        rounds: int,
    ) -> None:
        env_params: dict[str, Any] = {
            "n_arms": n_arms,
            "d": d,
            "arm_scale": arm_scale,
            "duplicate_arms": duplicate_arms,
        }
        if case.family == "contextual":
            env_params["reward_scale"] = reward_scale
        if case.family == "assortment":
            env_params["max_size"] = max_size
        policy, env = start(
            case, seed=seed, env_seed=env_seed, horizon=rounds, **env_params
        )
        try:
            play(policy, env, rounds)
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(
                f"{case} raised {type(exc).__name__}: {exc} on valid input."
            ) from exc
        assert_finite_state(policy)

    run()
