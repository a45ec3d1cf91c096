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

__all__ = ["STREAMS", "make_rng", "spawn_seeds"]

STREAMS: dict[str, int] = {"instance": 0, "contexts": 1, "noise": 2, "policy": 3}
"""The named streams and the spawn key each is derived with (a stable contract: changing a
number changes every result)."""


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
    children = np.random.SeedSequence(seed, spawn_key=(len(STREAMS),)).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]
