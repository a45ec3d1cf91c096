"""Penalties of the trainer: L2 towards a centre, on named parameter groups.

    L2Penalty(lam, center, names):  (lam / 2) * sum_{name in names} ||theta[name] - c[name]||^2

per member, with the centre c

* None: zero (practical mode of [Bae2025, Sec. 7]);
* the initial parameters theta_0 (pass the stack the run started from, [Zhou2020, Alg. 1]);
* a per-member random anchor / prior, e.g. ``net.init(M, generator)`` drawn once and
  stored, as ensemble sampling's regularisation towards a sampled prior [Osband2019].

``names`` restricts the penalty to a group (e.g. ``net.head_names``, the last layer only);
several penalties add up.

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Osband2019] I. Osband, B. Van Roy, D. Russo, Z. Wen. Deep exploration via
        randomized value functions. JMLR 2019.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from banditkit.core.validation import check_scalar
from banditkit.nn._kernels import no_grad_if_enabled
from banditkit.nn.network import Params

__all__ = ["L2Penalty"]


class L2Penalty:
    """(lam / 2) ||theta - c||^2 over the parameters ``names``, for every member.

    Args:
        lam: Weight, >= 0 (0 adds nothing).
        center: None for zero, or Params holding (at least) ``names``, each shaped
            like the parameter (M, ...) or (1, ...) (one centre for every member).
        names: The parameter group; None penalises every parameter.

    Raises:
        ValueError: On lam < 0, or a centre without one of ``names``.

    Example:
        >>> params = {"w": torch.ones(2, 3, dtype=torch.float64)}
        >>> value, grads = L2Penalty(2.0).apply(params, {"w": torch.zeros(2, 3)})
        >>> value.tolist(), grads["w"][0].tolist()
        ([3.0, 3.0], [2.0, 2.0, 2.0])
    """

    def __init__(
        self,
        lam: float,
        center: Params | None = None,
        names: Sequence[str] | None = None,
    ) -> None:
        self.lam = check_scalar("lam", lam, low=0.0)
        self.names = None if names is None else list(names)
        if center is not None and self.names is not None:
            missing = [n for n in self.names if n not in center]
            if missing:
                raise ValueError(f"center lacks the parameters {missing}.")
        self.center = center

    def apply(self, params: Params, grads: Params) -> tuple[torch.Tensor, Params]:
        """Return the penalty per member (M,) and ``grads`` plus lam (theta - c).

        ``grads`` is updated in place (its tensors replaced) and returned.
        """
        names = params.keys() if self.names is None else self.names
        if self.lam == 0.0:
            first = params[next(iter(names))]
            return first.new_zeros(first.shape[0]), grads
        half = 0.5 * self.lam
        value: torch.Tensor | None = None
        # the same products and sums as 0 + sum_name, one operation fewer per call; the
        # trainer calls this inside no_grad (nn.fit), so the context is entered only
        # when gradients are being recorded
        with no_grad_if_enabled():
            for name in names:
                theta = params[name]
                diff = theta if self.center is None else theta - self.center[name]
                flat = diff.reshape(diff.shape[0], -1)
                term = half * (flat * flat).sum(1)
                value = term if value is None else value.add_(term)
                grads[name] = torch.add(grads[name], diff, alpha=self.lam)
        assert value is not None
        return value, grads
