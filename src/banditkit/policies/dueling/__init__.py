"""Contextual dueling bandits [Oh2025]: NVLDB / NLDB and the baselines of its experiments.

    registry name   class      exploration features               weights zeta
    nvldb-ucb       NVLDBUCB   phi(x; W), D x D Gram (shallow)    max(sigma_hat, eps)
    nvldb-ts        NVLDBTS    same                               same
    nldb-ucb        NLDBUCB    same                               1
    nldb-ts         NLDBTS     same                               1
    ndb-ucb         NDBUCB     full gradient g(x; theta), p x p   1          [Verma2025]
    ndb-ts          NDBTS      same                               1          [Verma2025]
    colstim         CoLSTIM    x, linear                          1          [Bengs2022]
    vacdb           VACDB      x, linear, layered                 2^-l / ||z|| [Di2023]

The NVLDB / NLDB policies take ``rule`` ("asym", "osym", "csym"): the six rules of
``policies.dueling.rules`` (docs/dueling.md).

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
    [Verma2025] A. Verma, Z. Dai, X. Lin, P. Jaillet, B. K. H. Low. Neural dueling
        bandits: preference-based optimization with human feedback. ICLR 2025.
    [Bengs2022] V. Bengs, A. Saha, E. Hüllermeier. Stochastic contextual dueling bandits
        under linear stochastic transitivity models. ICML 2022.
    [Di2023] Q. Di, T. Jin, Y. Wu, H. Zhao, F. Farnoud, Q. Gu. Variance-aware regret bounds
        for stochastic contextual dueling bandits. ICLR 2024.
"""

from banditkit.glm.duel_links import LINKS, DuelLink
from banditkit.policies.dueling.linear import VACDB, CoLSTIM
from banditkit.policies.dueling.ndb import NDBTS, NDBUCB, NeuralDuelingPolicy
from banditkit.policies.dueling.nvldb import (
    NLDBTS,
    NLDBUCB,
    NVLDBTS,
    NVLDBUCB,
    NeuralLinearDuelingPolicy,
)
from banditkit.policies.dueling.rules import PairRule

__all__ = [
    "LINKS",
    "NDBTS",
    "NDBUCB",
    "NLDBTS",
    "NLDBUCB",
    "NVLDBTS",
    "NVLDBUCB",
    "VACDB",
    "CoLSTIM",
    "DuelLink",
    "NeuralDuelingPolicy",
    "NeuralLinearDuelingPolicy",
    "PairRule",
]
