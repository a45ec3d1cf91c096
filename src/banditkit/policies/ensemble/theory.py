"""The theoretical parameters of GLM-ES and Neural-ES [Sun2025, Thms 5.5 and 5.11].

For documentation and tests only: the ensemble sizes they require are far beyond what the
experiments use (m = 10). With the optimism probabilities

    p_N  = 1 - Phi(1) ~= 0.1587            (GLM, Lemma A.6)
    p_N' = 1 / (4 e sqrt(pi)) ~= 0.0519    (neural, Lemma C.7)

the ensemble must satisfy m >= (8 / p^2) (K log T + log(1 / delta)); GLM-ES takes
lambda = max(1, d, log(1 / delta)) (Thm 5.5; the proof in App. A.3 uses another lambda) and
sigma_R of order sqrt(d log T).

References:
    In the package's docstring (``banditkit.policies.ensemble``): [Sun2025].
"""

from __future__ import annotations

import math

from banditkit.core.validation import check_choice, check_int, check_scalar

__all__ = ["P_GLM", "P_NEURAL", "theory_params"]

#: 1 - Phi(1), the optimism probability of a Gaussian perturbation [Sun2025, Lemma A.6].
P_GLM = 0.5 * math.erfc(1.0 / math.sqrt(2.0))  # Phi(-1), the standard normal tail at 1
#: (4 e sqrt(pi))^-1, the neural optimism probability [Sun2025, Lemma C.7].
P_NEURAL = 1.0 / (4.0 * math.e * math.sqrt(math.pi))


def theory_params(
    family: str, *, d: int, n_arms: int, horizon: int, delta: float = 0.05
) -> dict[str, float]:
    """Ensemble size m, lambda and the order sqrt(d log T) of sigma_R from the theorems.

    Args:
        family: "glm" (Thm 5.5) or "neural" (Thm 5.11; lambda and sigma_R depend on NTK
            quantities, so only m is given).
        d: Feature dimension.
        n_arms: K.
        horizon: T.
        delta: Failure probability, in (0, 1).

    Example:
        >>> p = theory_params("glm", d=20, n_arms=50, horizon=10_000)
        >>> p["m"], p["lam"]
        (147314, 20.0)
    """
    family = check_choice("family", family, ("glm", "neural"))
    d = check_int("d", d, low=1)
    K = check_int("n_arms", n_arms, low=1)
    T = check_int("horizon", horizon, low=2)
    delta = check_scalar(
        "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True
    )
    p = P_GLM if family == "glm" else P_NEURAL
    m = math.ceil(8.0 / p**2 * (K * math.log(T) + math.log(1.0 / delta)))
    out: dict[str, float] = {"m": m, "p": p}
    if family == "glm":
        out["lam"] = float(max(1.0, d, math.log(1.0 / delta)))
        out["sigma_order"] = math.sqrt(d * math.log(T))
    return out
