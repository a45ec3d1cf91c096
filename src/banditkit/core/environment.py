"""The :class:`Environment` base class and its round protocol.

An environment owns three independent streams derived from the seed given to ``reset``
(``core.seeding``): ``instance_rng`` for its hidden parameters (a latent function, a data pool),
``context_rng`` for the arms shown each round, and ``noise_rng`` for the outcome noise. Noise is
drawn once per round *before* the action is known, so every policy run under the same seed sees
the same contexts and the same noise (common random numbers).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from banditkit.core.seeding import make_rng
from banditkit.core.types import Action, Context, Step, check_action

__all__ = ["Environment"]


class Environment(ABC):
    """Base class of every environment (DESIGN.md section 3).

    Subclasses implement ``_reset`` (draw the instance), ``_next_context`` (the next round's
    context, or None when a finite log is exhausted) and ``_step`` (outcome of a validated
    action), and may implement ``expected_rewards`` / ``best_action`` for the oracle.
    """

    family: ClassVar[str] = "contextual"
    registry_name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.seed: int | None = None
        self.instance_rng: np.random.Generator = make_rng(0, "instance")
        self.context_rng: np.random.Generator = make_rng(0, "contexts")
        self.noise_rng: np.random.Generator = make_rng(0, "noise")
        self.current: Context | None = None
        self.round = 0

    def reset(self, seed: int) -> None:
        """Start a new run: draw the instance and rewind every stream for ``seed``."""
        self.instance_rng = make_rng(seed, "instance")
        self.context_rng = make_rng(seed, "contexts")
        self.noise_rng = make_rng(seed, "noise")
        self.seed = seed
        self.current = None
        self.round = 0
        self._reset()

    def context(self) -> Context | None:
        """The context of the next round (None: a finite log is exhausted)."""
        if self.seed is None:
            raise RuntimeError("call reset(seed) before the first context().")
        self.current = self._next_context()
        return self.current

    def step(self, action: Action) -> Step:
        """Play ``action`` in the current round and return its outcome."""
        if self.current is None:
            raise RuntimeError("call context() before step().")
        action = check_action(action, self.current, self.family)
        result = self._step(self.current, action)
        self.current = None
        self.round += 1
        return result

    def best_action(self) -> Action:
        """The action with the largest expected reward in the current round (for the oracle)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not expose its optimal action."
        )

    @abstractmethod
    def _reset(self) -> None: ...

    @abstractmethod
    def _next_context(self) -> Context | None: ...

    @abstractmethod
    def _step(self, ctx: Context, action: Action) -> Step: ...

    @property
    def label(self) -> str:
        """A short name for tables and figures (registry name plus the defining option)."""
        return self.registry_name or type(self).__name__

    @classmethod
    def param_names(cls) -> list[str]:
        """Keyword parameters of ``__init__``."""
        sig = inspect.signature(cls.__init__)
        return [n for n in sig.parameters if n != "self"]

    def get_params(self) -> dict[str, Any]:
        """The parameters this environment was built with."""
        return {name: getattr(self, name) for name in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
