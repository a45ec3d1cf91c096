"""Generalised linear models: link functions and regularised / constrained MLE.

links   Link, IdentityLink, LogisticLink, ProbitLink, LINKS, get_link
mle     GLMFit, fit_glm, fit_logistic_unchecked, glm_hessian
constrained  fit_glm_constrained (over a ball)
stacked fit_glm_stacked (M members at once, grouped rows; GD or Newton)
mnl     MNLSets, MNLFit, fit_mnl, mnl_objective (multinomial logit, linear utilities)
duel_links  DuelLink, get_duel_link (a binary link read on the utility difference of a duel)
"""

from banditkit.glm.constrained import fit_glm_constrained
from banditkit.glm.duel_links import DuelLink, get_duel_link
from banditkit.glm.links import (
    LINKS,
    IdentityLink,
    Link,
    LogisticLink,
    ProbitLink,
    get_link,
)
from banditkit.glm.mle import GLMFit, fit_glm, fit_logistic_unchecked, glm_hessian
from banditkit.glm.mnl import MNLFit, MNLSets, fit_mnl, mnl_objective
from banditkit.glm.stacked import fit_glm_stacked

__all__ = [
    "LINKS",
    "DuelLink",
    "GLMFit",
    "IdentityLink",
    "Link",
    "LogisticLink",
    "MNLFit",
    "MNLSets",
    "ProbitLink",
    "fit_glm",
    "fit_glm_constrained",
    "fit_glm_stacked",
    "fit_logistic_unchecked",
    "fit_mnl",
    "get_duel_link",
    "get_link",
    "glm_hessian",
    "mnl_objective",
]
