"""Seed derivation: independent, reproducible random streams from one integer seed.

Every stream comes from ``numpy.random.SeedSequence(seed, spawn_key=(stream,))``, so

* the environment's instance (its hidden parameters), its context stream, its noise stream and a
  policy's own stream are statistically independent of one another;
* the same seed gives the same contexts and the same noise to every policy (common random
  numbers), whatever the policy does, because environments draw their per-round noise
  independently of the action;
* nothing touches global state (``np.random.seed``, ``torch.manual_seed``).
"""

from __future__ import annotations

import numpy as np

from banditkit.core.validation import check_choice, check_int

__all__ = ["STREAMS", "RoundStreams", "make_rng", "spawn_seeds"]

STREAMS: dict[str, int] = {
    "instance": 0,
    "contexts": 1,
    "noise": 2,
    "policy": 3,
    "propensity": 5,
}
"""The named streams and the spawn key each is derived with (a stable contract: changing a
number changes every result). Key 4 is :func:`spawn_seeds`'s. "propensity" draws the Monte
Carlo estimates of a policy's propensities (:class:`RoundStreams`), never its actions."""

#: The spawn key of :func:`spawn_seeds` (it was ``len(STREAMS)`` with the first four).
_SPAWN_KEY = 4
#: Draws between two rounds' generators of a :class:`RoundStreams` (2^64 of PCG64's 2^128).
_ROUND_STRIDE = 1 << 64


def make_rng(seed: int, stream: str) -> np.random.Generator:
    """Return the generator of a named stream for ``seed``.

    Args:
        seed: A non-negative integer seed.
        stream: One of ``STREAMS``: "instance", "contexts", "noise", "policy".

    Returns:
        A fresh ``numpy.random.Generator`` (PCG64).

    Example:
        >>> a = make_rng(0, "noise").random()
        >>> b = make_rng(0, "noise").random()
        >>> a == b and a != make_rng(0, "contexts").random()
        True
    """
    seed = check_int("seed", seed, low=0)
    check_choice("stream", stream, list(STREAMS))
    return np.random.default_rng(
        np.random.SeedSequence(seed, spawn_key=(STREAMS[stream],))
    )


def spawn_seeds(seed: int, n: int) -> list[int]:
    """Derive ``n`` independent child seeds from ``seed`` (e.g. for ensemble members or workers).

    Example:
        >>> spawn_seeds(0, 2) == spawn_seeds(0, 2)
        True
    """
    seed = check_int("seed", seed, low=0)
    n = check_int("n", n, low=0)
    children = np.random.SeedSequence(seed, spawn_key=(_SPAWN_KEY,)).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]


class RoundStreams:
    """One independent generator per round of a named stream, derived from seed and round.

    Round r's generator is the stream of ``make_rng(seed, stream)`` advanced by r * 2^64
    draws (PCG64's ``advance``: microseconds, where building a generator from a seed
    sequence costs tens of them), so its draws depend on the seed and the round only: not
    on what earlier rounds drew, nor on a save and restore in between.

    Example:
        >>> streams = RoundStreams(0, "propensity")
        >>> a = streams(3).random()
        >>> _ = streams(4).random()
        >>> streams(3).random() == a and RoundStreams(0, "propensity")(3).random() == a
        True
    """

    def __init__(self, seed: int, stream: str) -> None:
        self._rng = make_rng(seed, stream)
        self._start = self._rng.bit_generator.state

    def __call__(self, round: int) -> np.random.Generator:
        """The generator of ``round`` (>= 0), at its start; the object is reused."""
        bits = self._rng.bit_generator
        bits.state = self._start
        bits.advance(check_int("round", round, low=0) * _ROUND_STRIDE)  # type: ignore[attr-defined]
        return self._rng
