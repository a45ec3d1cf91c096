"""Policies, one module per family; importing this package registers all of them.

Each policy is a thin composition of shared parts (docs/models.md):

    history       policies.history (rows, pairs, sets)
    model         policies.models (one Model protocol: ridge, GLM MLE, neural networks)
    uncertainty   linalg Gram matrices (one GramLike interface) and weighted norms
    scorer        policies.scorer (a model + an uncertainty: means and widths)
    selection     policies.selection (arm, top-K set, pair rules)
    schedule      policies.schedules (periodic, static grid, determinant doubling)
"""

from banditkit.policies.baseline import (
    AssortmentOracle,
    DuelingOracle,
    Oracle,
    RandomAssortment,
    RandomDuel,
    RandomPolicy,
)
from banditkit.policies.classic import KLUCB, UCB1, BernoulliTS
from banditkit.policies.dueling import (
    NDBTS,
    NDBUCB,
    NLDBTS,
    NLDBUCB,
    NVLDBTS,
    NVLDBUCB,
    VACDB,
    CoLSTIM,
)
from banditkit.policies.ensemble import EVILL, GLMES, GLMFPL, LinES, NeuralES, NeuralPHE
from banditkit.policies.glm import GLMTS, GLMUCB
from banditkit.policies.hybrid import HybridLinUCB
from banditkit.policies.linear import EpsGreedy, LinTS, LinUCB
from banditkit.policies.logistic import AdaOFUECOLog, LogisticUCB1
from banditkit.policies.mnl import ONLMNL, TSMNL, UCBMNL, EpsGreedyMNL, OFUMNLPlus
from banditkit.policies.neural import NeuralTS, NeuralUCB
from banditkit.policies.neurallog import (
    NCBFUCB,
    NeuralLogTS1,
    NeuralLogTS2,
    NeuralLogUCB1,
    NeuralLogUCB2,
)
from banditkit.policies.perarm import PerArmEpsGreedy, PerArmLinTS, PerArmLinUCB
from banditkit.policies.perarm_glm import PerArmGLMTS, PerArmGLMUCB
from banditkit.policies.rare import (
    BGLE,
    BLCE,
    BLCEG,
    RSOFUL,
    BatchLearning,
    BatchLinUCBDG,
    BGLinCB,
    SoftBatch,
)
from banditkit.policies.sklearn_arms import SklearnArms

__all__ = [
    "BGLE",
    "BLCE",
    "BLCEG",
    "EVILL",
    "GLMES",
    "GLMFPL",
    "GLMTS",
    "GLMUCB",
    "KLUCB",
    "NCBFUCB",
    "NDBTS",
    "NDBUCB",
    "NLDBTS",
    "NLDBUCB",
    "NVLDBTS",
    "NVLDBUCB",
    "ONLMNL",
    "RSOFUL",
    "TSMNL",
    "UCB1",
    "UCBMNL",
    "VACDB",
    "AdaOFUECOLog",
    "AssortmentOracle",
    "BGLinCB",
    "BatchLearning",
    "BatchLinUCBDG",
    "BernoulliTS",
    "CoLSTIM",
    "DuelingOracle",
    "EpsGreedy",
    "EpsGreedyMNL",
    "HybridLinUCB",
    "LinES",
    "LinTS",
    "LinUCB",
    "LogisticUCB1",
    "NeuralES",
    "NeuralLogTS1",
    "NeuralLogTS2",
    "NeuralLogUCB1",
    "NeuralLogUCB2",
    "NeuralPHE",
    "NeuralTS",
    "NeuralUCB",
    "OFUMNLPlus",
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
    "SoftBatch",
]
