"""Linear algebra for bandits: Gram matrices, weighted norms and optimal designs.

    Gram                    full V = lam * I + sum w x x^T with V^-1, L, log det V
    DiagonalGram            diag(V) only, for d in the tens of thousands
    weighted_norms          sqrt(x_k^T A_inv x_k) for all rows at once
    cholesky_rank1_update   factor of L L^T + x x^T in O(d^2)
    g_optimal_design        near-G-optimal design (Frank-Wolfe / Khachiyan)
    max_leverage            G-criterion max_i x_i^T A(pi)^-1 x_i of a design

This package imports only numpy, scipy and ``banditkit.core.validation``.
"""

from .design import g_optimal_design, max_leverage
from .diagonal import DiagonalGram
from .gram import Gram
from .rank1 import cholesky_rank1_update, weighted_norms

__all__ = [
    "DiagonalGram",
    "Gram",
    "cholesky_rank1_update",
    "g_optimal_design",
    "max_leverage",
    "weighted_norms",
]
