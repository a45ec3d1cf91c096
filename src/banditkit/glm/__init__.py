"""Generalised linear models: link functions and regularised / constrained MLE.

links   Link, IdentityLink, LogisticLink, ProbitLink, LINKS, get_link
mle     GLMFit, fit_glm, fit_glm_constrained, glm_hessian
stacked fit_glm_stacked (M members at once, grouped rows; GD or Newton)
"""

from banditkit.glm.links import (
    LINKS,
    IdentityLink,
    Link,
    LogisticLink,
    ProbitLink,
    get_link,
)
from banditkit.glm.mle import GLMFit, fit_glm, fit_glm_constrained, glm_hessian
from banditkit.glm.stacked import fit_glm_stacked

__all__ = [
    "LINKS",
    "GLMFit",
    "IdentityLink",
    "Link",
    "LogisticLink",
    "ProbitLink",
    "fit_glm",
    "fit_glm_constrained",
    "fit_glm_stacked",
    "get_link",
    "glm_hessian",
]
