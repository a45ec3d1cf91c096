"""Ensemble sampling for nonlinear contextual bandits [Sun2025].

Lin-ES, GLM-ES, Neural-ES, their anytime (doubling-trick) variants, and Neural-PHE:

    history    PerturbedHistory: shared rows, stored per-member perturbations, and its
               grouped view GroupedRows (distinct rows, counts, target sums)
    members    RidgeEnsemble, GLMEnsemble, NeuralEnsemble: M members fitted as one stack
    warmup     G-optimal design rounding (Algorithms 2-3), warm-up plans
    anytime    doubling schedule T_i = floor(T0 b^i), per-phase (m_i, sigma_R,i), l(T0, b)
    base       EnsemblePolicy, the loop of Algorithm 1 with anytime restarts
    policies   lin-es, glm-es, glm-fpl (registered)
    neural     neural-es, neural-phe (registered)
    evill      evill, the linearly perturbed GLM comparator [Janz2024] (registered)
    theory     the ensemble sizes and lambda of Thms 5.5 and 5.11 (documentation)

References:
    [Janz2024] D. Janz, S. Liu, A. Ayoub, C. Szepesvari. Exploration via linearly perturbed
        loss minimisation. AISTATS 2024.
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
    [Jia2022] Y. Jia, W. Zhang, D. Zhou, Q. Gu, H. Wang. Learning neural contextual bandits
        through perturbed rewards. ICLR 2022.
"""

from banditkit.policies.ensemble.anytime import (
    GOLDEN_BASE,
    doubling_factor,
    phase_ends,
    phase_lengths,
    phase_parameters,
)
from banditkit.policies.ensemble.base import EnsemblePolicy
from banditkit.policies.ensemble.evill import (
    EVILL,
    evill_perturbation,
    fit_linearly_perturbed,
)
from banditkit.policies.ensemble.history import GroupedRows, PerturbedHistory
from banditkit.policies.ensemble.members import (
    GLMEnsemble,
    NeuralEnsemble,
    RidgeEnsemble,
)
from banditkit.policies.ensemble.neural import NeuralES, NeuralPHE
from banditkit.policies.ensemble.policies import GLMES, GLMFPL, LinES
from banditkit.policies.ensemble.theory import theory_params
from banditkit.policies.parts.warmup import design_plan, round_design

__all__ = [
    "EVILL",
    "GLMES",
    "GLMFPL",
    "GOLDEN_BASE",
    "EnsemblePolicy",
    "GLMEnsemble",
    "GroupedRows",
    "LinES",
    "NeuralES",
    "NeuralEnsemble",
    "NeuralPHE",
    "PerturbedHistory",
    "RidgeEnsemble",
    "design_plan",
    "doubling_factor",
    "evill_perturbation",
    "fit_linearly_perturbed",
    "phase_ends",
    "phase_lengths",
    "phase_parameters",
    "round_design",
    "theory_params",
]
