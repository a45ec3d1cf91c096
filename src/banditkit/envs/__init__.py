"""Environments: synthetic (linear, logistic, nonlinear) and classification bandits.

Importing this package registers every environment in ``banditkit.core.ENVIRONMENTS``.
"""

from banditkit.envs.classification import ClassificationEnv, DatasetEnv, encode_arms
from banditkit.envs.dueling import DuelingEnv
from banditkit.envs.dueling_classification import DuelingClassificationEnv
from banditkit.envs.ensemble import NonlinearEnv
from banditkit.envs.latent import LATENT_FUNCTIONS, make_latent
from banditkit.envs.laws import LAWS, sample_contexts
from banditkit.envs.mnl import MNLEnv
from banditkit.envs.mnl_text import TextMNLEnv
from banditkit.envs.rare import RareLinearEnv, RareLogisticEnv
from banditkit.envs.replay import LogReplayEnv, OBDReplayEnv, ReplayEnv
from banditkit.envs.synthetic import LinearEnv, LogisticEnv, SyntheticEnv

__all__ = [
    "LATENT_FUNCTIONS",
    "LAWS",
    "ClassificationEnv",
    "DatasetEnv",
    "DuelingClassificationEnv",
    "DuelingEnv",
    "LinearEnv",
    "LogReplayEnv",
    "LogisticEnv",
    "MNLEnv",
    "NonlinearEnv",
    "OBDReplayEnv",
    "RareLinearEnv",
    "RareLogisticEnv",
    "ReplayEnv",
    "SyntheticEnv",
    "TextMNLEnv",
    "encode_arms",
    "make_latent",
    "sample_contexts",
]
