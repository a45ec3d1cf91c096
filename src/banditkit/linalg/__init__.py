"""Linear algebra for bandits: Gram matrices, weighted norms and optimal designs.

    Gram                    full V = lam * I + sum w x x^T with V^-1, L, log det V
    InPlaceGram             the same, updated in place on the span of each update (fast
                            on block-encoded arms; views instead of snapshots)
    DiagonalGram            diag(V) only, for d in the tens of thousands
    ShiftedGram             ridge * I + sum w z z^T with a ridge that may change every round
    GramLike                the interface all three answer (norms, pair_norms, update, logdet, ...)
    make_gram               a Gram, InPlaceGram (d >= IN_PLACE_FROM) or DiagonalGram by
                            name ("full", "diagonal")
    EffectiveDimension      d_eff = logdet(I + a sum z z^T), diagonal or exact
    KernelLogdet            that log-determinant exactly via the n x n Gram (large p)
    weighted_norms          sqrt(x_k^T A_inv x_k) for all rows at once
    cholesky_rank1_update   factor of L L^T + x x^T in O(d^2)
    g_optimal_design        near-G-optimal design (Frank-Wolfe / Khachiyan)
    max_leverage            G-criterion max_i x_i^T A(pi)^-1 x_i of a design

This package imports only numpy, scipy and ``banditkit.core.validation``.
"""

from .design import g_optimal_design, max_leverage
from .diagonal import DiagonalGram
from .effdim import (
    EFFDIMS,
    EXACT_FULL_MAX,
    IN_PLACE_FROM,
    EffectiveDimension,
    KernelLogdet,
    make_gram,
)
from .gram import Gram
from .inplace import InPlaceGram
from .protocol import GramLike
from .rank1 import cholesky_rank1_update, weighted_norms
from .shifted import GRAMS, ShiftedGram

__all__ = [
    "EFFDIMS",
    "EXACT_FULL_MAX",
    "GRAMS",
    "IN_PLACE_FROM",
    "DiagonalGram",
    "EffectiveDimension",
    "Gram",
    "GramLike",
    "InPlaceGram",
    "KernelLogdet",
    "ShiftedGram",
    "cholesky_rank1_update",
    "g_optimal_design",
    "make_gram",
    "max_leverage",
    "weighted_norms",
]
