"""Policies, one module per family; importing this package registers all of them.

Each policy is a thin composition of shared parts (DESIGN.md section 2):

    model         policies.models (ridge, GLM MLE), nn (neural networks)
    uncertainty   linalg Gram matrices and weighted norms
    selection     policies.selection
    schedule      policies.schedules
"""

from banditkit.policies.baseline import Oracle, RandomPolicy
from banditkit.policies.glm import GLMTS, GLMUCB
from banditkit.policies.linear import EpsGreedy, LinTS, LinUCB

__all__ = ["GLMTS", "GLMUCB", "EpsGreedy", "LinTS", "LinUCB", "Oracle", "RandomPolicy"]
