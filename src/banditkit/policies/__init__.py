"""Policies: the shared parts, the baselines and one folder per paper family.

Importing this package registers every policy. The layout:

    parts/        what the families compose (history, models, scorer, selection,
                  schedules, warm-up; docs/models.md)
    baselines/    reference (random, oracle), classic, linear, GLM, per-arm, hybrid,
                  neural (NeuralUCB, NeuralTS) and scikit-learn baselines
    logistic/     neural logistic bandits and their linear logistic baselines
    dueling/ ensemble/ mnl/ rare/    the other paper families
"""

from banditkit.policies import baselines, logistic, mnl
from banditkit.policies.baselines import *  # noqa: F403 (the family's policies)
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
from banditkit.policies.logistic import *  # noqa: F403 (the family's policies)
from banditkit.policies.mnl import *  # noqa: F403 (the family's policies)
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

#: Every registered policy class: the families' own lists plus the other families' policies.
__all__ = [
    "BGLE",
    "BLCE",
    "BLCEG",
    "EVILL",
    "GLMES",
    "GLMFPL",
    "NDBTS",
    "NDBUCB",
    "NLDBTS",
    "NLDBUCB",
    "NVLDBTS",
    "NVLDBUCB",
    "RSOFUL",
    "VACDB",
    "BGLinCB",
    "BatchLearning",
    "BatchLinUCBDG",
    "CoLSTIM",
    "LinES",
    "NeuralES",
    "NeuralPHE",
    "SoftBatch",
]
__all__ += baselines.__all__
__all__ += logistic.__all__
__all__ += mnl.__all__
