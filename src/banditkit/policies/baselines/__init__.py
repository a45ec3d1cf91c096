"""Baselines shared by the families: reference, classic, linear, GLM, per-arm, neural, sklearn."""

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
