"""Baselines shared by the families: reference, classic, linear, GLM, per-arm, neural, sklearn.

References:
    [Filippi2010] S. Filippi, O. Cappe, A. Garivier, C. Szepesvari. Parametric bandits: the
        generalized linear case. NeurIPS 2010.
    [Kveton2020] B. Kveton, M. Zaheer, C. Szepesvari, L. Li, M. Ghavamzadeh, C. Boutilier.
        Randomized exploration in generalized linear bandits. AISTATS 2020.
    [Li2010] L. Li, W. Chu, J. Langford, R. Schapire. A contextual-bandit approach to
        personalized news article recommendation. WWW 2010.
    [Agrawal2013] S. Agrawal, N. Goyal. Thompson sampling for contextual bandits with linear
        payoffs. ICML 2013.
"""

from banditkit.policies.baselines.classic import KLUCB, UCB1, BernoulliTS
from banditkit.policies.baselines.glm import GLMTS, GLMUCB
from banditkit.policies.baselines.hybrid import HybridLinUCB
from banditkit.policies.baselines.linear import EpsGreedy, LinTS, LinUCB
from banditkit.policies.baselines.neural import NeuralTS, NeuralUCB
from banditkit.policies.baselines.perarm import (
    PerArmEpsGreedy,
    PerArmLinTS,
    PerArmLinUCB,
)
from banditkit.policies.baselines.perarm_glm import PerArmGLMTS, PerArmGLMUCB
from banditkit.policies.baselines.reference import (
    AssortmentOracle,
    DuelingOracle,
    Oracle,
    RandomAssortment,
    RandomDuel,
    RandomPolicy,
)
from banditkit.policies.baselines.sklearn_arms import SklearnArms

__all__ = [
    "GLMTS",
    "GLMUCB",
    "KLUCB",
    "UCB1",
    "AssortmentOracle",
    "BernoulliTS",
    "DuelingOracle",
    "EpsGreedy",
    "HybridLinUCB",
    "LinTS",
    "LinUCB",
    "NeuralTS",
    "NeuralUCB",
    "Oracle",
    "PerArmEpsGreedy",
    "PerArmGLMTS",
    "PerArmGLMUCB",
    "PerArmLinTS",
    "PerArmLinUCB",
    "RandomAssortment",
    "RandomDuel",
    "RandomPolicy",
    "SklearnArms",
]
