"""The six arm-selection rules of NVLDB [Oh2025, Sec. 4.2, App. C.1, D, E.2.2], vectorised.

Every rule reads the estimated utilities f (K,) and the (K, K) matrix of pair bonuses

    b[k, k'] = ||phi_k - phi_k'||_{V^-1}        (symmetric, zero diagonal)

with the confidence coefficient a (= a_t, "nu" in the paper's listings), and returns an
ordered pair (k1, k2). Identical-arm pairs (k, k) are allowed, as in the paper. Ties go to the
first pair in row-major order (numpy's argmax), as in the reference listings.

    UCB-ASYM   k1 = argmax_k f_k;  k2 = argmax_k f_k + a b[k, k1]                    (Eq. 7)
    UCB-OSYM   argmax_(k, k') f_k + f_k' + a b[k, k']
    UCB-CSYM   C = {k : f_k - f_k' + a b[k, k'] >= 0 for all k'};
               argmax_(k, k') in C x C  b[k, k']
    TS-ASYM    k1 = argmax_k f_k;  k2 = argmax_k s_k,  s_k ~ N(f_k - f_k1, a^2 b[k, k1]^2)
    TS-OSYM    argmax_(k, k') s[k, k'],  s[k, k'] ~ N(f_k + f_k', a^2 b[k, k']^2)
    TS-CSYM    C as UCB-CSYM; argmax over C x C of
               "listing": s ~ N(a b, ((a b)^2 / 4 + 1e-12)^2)            [Oh2025, Listing 4]
               "paper":   s ~ N(b^2, b^4 / (4 log(K t^2)))                [Oh2025, Sec. 4.2.2]

The candidate set uses ">=" (App. C.1, D.3): the strict ">" of Sec. 4.2.1 would exclude every
arm through k' = k. C always holds argmax_k f_k, so it is never empty.

Each TS rule draws a fixed number of standard normals (K for ASYM, K x K otherwise), whatever
the inputs, so the policy's random stream advances identically from round to round.

References:
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250 (AISTATS 2026).
"""

from __future__ import annotations

import math

import numpy as np

from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.policies.parts.propensity import Law, MonteCarlo, PointLaw, SampledLaw

__all__ = [
    "EXPLORATIONS",
    "RULES",
    "TSCSYM_FORMS",
    "PairRule",
    "candidate_mask",
    "ts_asym",
    "ts_csym",
    "ts_osym",
    "ucb_asym",
    "ucb_csym",
    "ucb_osym",
]

RULES = ("asym", "osym", "csym")
EXPLORATIONS = ("ucb", "ts")
TSCSYM_FORMS = ("listing", "paper")
_STD_FLOOR = 1e-12  # the listings' "+ 1e-12" on a TS standard deviation


def _first_argmax(scores: np.ndarray) -> int:
    """Flat index of the largest score, the first one on ties; NaN is refused."""
    flat = int(np.argmax(scores))
    if np.isnan(scores.reshape(-1)[flat]):
        raise ValueError(
            "scores contain NaN; for a neural policy this usually means that its "
            "training diverged (lower lr)."
        )
    return flat


def _pair(scores: np.ndarray) -> tuple[int, int]:
    flat = _first_argmax(scores)
    K = scores.shape[1]
    return flat // K, flat % K


def candidate_mask(f: np.ndarray, b: np.ndarray, a: float) -> np.ndarray:
    """C_t of UCB/TS-CSYM as a boolean (K,) mask: f_k - f_k' + a b[k, k'] >= 0 for all k'.

    Example:
        >>> candidate_mask(np.array([1.0, 0.0]), np.array([[0.0, 0.5], [0.5, 0.0]]), 1.0)
        array([ True, False])
    """
    return np.all(f[:, None] - f[None, :] + a * b >= 0.0, axis=1)


def ucb_asym(f: np.ndarray, b: np.ndarray, a: float) -> tuple[int, int]:
    """UCB-ASYM [Oh2025, Eq. 7]: the greedy arm, then its best optimistic competitor.

    Example:
        >>> b = np.array([[0.0, 2.0], [2.0, 0.0]])
        >>> ucb_asym(np.array([1.0, 0.0]), b, 1.0)
        (0, 1)
    """
    k1 = _first_argmax(f)
    k2 = _first_argmax(f + a * b[:, k1])
    return k1, k2


def ucb_osym(f: np.ndarray, b: np.ndarray, a: float) -> tuple[int, int]:
    """UCB-OSYM [Oh2025, Sec. 4.2.1]: argmax over all pairs of f_k + f_k' + a b[k, k']."""
    return _pair(f[:, None] + f[None, :] + a * b)


def ucb_csym(f: np.ndarray, b: np.ndarray, a: float) -> tuple[int, int]:
    """UCB-CSYM [Oh2025, Sec. 4.2.1, App. C.1]: the candidate pair of largest bonus."""
    c = candidate_mask(f, b, a)
    return _pair(np.where(c[:, None] & c[None, :], b, -np.inf))


def ts_asym(
    f: np.ndarray, b: np.ndarray, a: float, rng: np.random.Generator
) -> tuple[int, int]:
    """TS-ASYM [Oh2025, Sec. 4.2.2]: greedy k1, then k2 from s_k ~ N(f_k - f_k1, (a b[k, k1])^2).

    Draws K standard normals.
    """
    k1 = _first_argmax(f)
    z = np.asarray(rng.standard_normal(f.shape[0]))
    return k1, _first_argmax(_asym_scores(f, b, a, k1, z))


def _asym_scores(
    f: np.ndarray, b: np.ndarray, a: float, k1: int, z: np.ndarray
) -> np.ndarray:
    """TS-ASYM's samples of the second arm for standard normals z (..., K)."""
    return f - f[k1] + a * b[:, k1] * z


def ts_osym(
    f: np.ndarray, b: np.ndarray, a: float, rng: np.random.Generator
) -> tuple[int, int]:
    """TS-OSYM [Oh2025, Sec. 4.2.2]: argmax of one N(f_k + f_k', (a b[k, k'])^2) draw per pair.

    Draws K x K standard normals; s[k, k'] and s[k', k] are independent.
    """
    z = rng.standard_normal(b.shape)
    return _pair(_osym_scores(f, b, a, z))


def _osym_scores(f: np.ndarray, b: np.ndarray, a: float, z: np.ndarray) -> np.ndarray:
    """TS-OSYM's samples of every pair for standard normals z (..., K, K)."""
    return f[:, None] + f[None, :] + a * b * z


def ts_csym(
    f: np.ndarray,
    b: np.ndarray,
    a: float,
    t: int,
    rng: np.random.Generator,
    *,
    form: str = "listing",
) -> tuple[int, int]:
    """TS-CSYM [Oh2025, Sec. 4.2.2, App. D.3, Listing 4]: a sampled bonus over C x C.

    Args:
        f: Utilities (K,).
        b: Pair bonuses (K, K).
        a: Confidence coefficient a_t >= 0.
        t: Round, >= 1 (the paper form's log(K t^2)).
        rng: Draws K x K standard normals.
        form: "listing" (mean a b, std (a b)^2 / 4 + 1e-12, the reference code) or
            "paper" (mean b^2, std b^2 / (2 sqrt(log(K t^2))), the formula of Sec. 4.2.2).
    """
    c = candidate_mask(f, b, a)
    z = rng.standard_normal(b.shape)
    return _pair(_csym_scores(c, b, a, t, form, z))


def _csym_scores(
    c: np.ndarray, b: np.ndarray, a: float, t: int, form: str, z: np.ndarray
) -> np.ndarray:
    """TS-CSYM's samples over C x C (-inf outside) for standard normals z (..., K, K)."""
    if form == "listing":
        mean = a * b
        std = mean * mean / 4.0 + _STD_FLOOR
    else:
        mean = b * b
        log_term = math.log(max(b.shape[0] * t * t, 2))
        std = mean / (2.0 * math.sqrt(log_term))
    return np.where(c[:, None] & c[None, :], mean + std * z, -np.inf)


class PairRule:
    """One of the six rules as a policy part: ``select(f, b, t, rng)``.

    Args:
        exploration: "ucb" or "ts".
        rule: "asym", "osym" or "csym".
        a: Confidence coefficient a_t, >= 0 (a constant, as in [Oh2025, App. E.2.1]).
        tscsym_form: "listing" or "paper" (TS-CSYM only).

    Example:
        >>> rule = PairRule("ucb", "osym", a=1.0)
        >>> rule.select(np.array([0.0, 1.0]), np.zeros((2, 2)), 1, None)
        (1, 1)
    """

    def __init__(
        self, exploration: str, rule: str, *, a: float, tscsym_form: str = "listing"
    ) -> None:
        self.exploration = check_choice("exploration", exploration, EXPLORATIONS)
        self.rule = check_choice("rule", rule, RULES)
        self.a = check_scalar("a", a, low=0.0)
        self.tscsym_form = check_choice("tscsym_form", tscsym_form, TSCSYM_FORMS)

    @property
    def name(self) -> str:
        """For example "UCB-ASYM"."""
        return f"{self.exploration}-{self.rule}".upper()

    def select(
        self,
        f: np.ndarray,
        b: np.ndarray,
        t: int,
        rng: np.random.Generator | None,
    ) -> tuple[int, int]:
        """The pair for utilities f (K,) and bonuses b (K, K) in round t (>= 1)."""
        f = np.asarray(f, dtype=float)
        b = np.asarray(b, dtype=float)
        K = f.shape[0]
        if f.ndim != 1 or b.shape != (K, K):
            raise ValueError(
                f"f must be (K,) and b (K, K); got {f.shape} and {b.shape}."
            )
        a = self.a
        if self.exploration == "ucb":
            if self.rule == "asym":
                return ucb_asym(f, b, a)
            if self.rule == "osym":
                return ucb_osym(f, b, a)
            return ucb_csym(f, b, a)
        if rng is None:
            raise ValueError("rng is required by the Thompson-sampling rules.")
        if self.rule == "asym":
            return ts_asym(f, b, a, rng)
        if self.rule == "osym":
            return ts_osym(f, b, a, rng)
        return ts_csym(f, b, a, check_int("t", t, low=1), rng, form=self.tscsym_form)

    def law(
        self,
        f: np.ndarray,
        b: np.ndarray,
        t: int,
        chosen: tuple[int, int],
        mc: MonteCarlo | None = None,
    ) -> Law | None:
        """The law of ``select``'s pair: 1 for a UCB rule (ties go to the first pair).

        A TS rule's is a Monte Carlo estimate from ``mc.samples`` further draws of its
        standard normals (None without ``mc``), over the (K, K) pairs.
        """
        if self.exploration == "ucb":
            return PointLaw(chosen)
        if mc is None:
            return None
        f = np.asarray(f, dtype=float)
        b = np.asarray(b, dtype=float)
        K, n, a, rng = f.shape[0], mc.samples, self.a, mc.rng()
        if self.rule == "asym":
            k1 = _first_argmax(f)
            z = rng.standard_normal((n, K))
            flat = k1 * K + _asym_scores(f, b, a, k1, z).argmax(axis=1)
        else:
            z = rng.standard_normal((n, K, K))
            if self.rule == "osym":
                scores = _osym_scores(f, b, a, z)
            else:
                c = candidate_mask(f, b, a)
                scores = _csym_scores(c, b, a, t, self.tscsym_form, z)
            flat = scores.reshape(n, K * K).argmax(axis=1)
        counts = np.bincount(flat, minlength=K * K).reshape(K, K).astype(float)
        return SampledLaw(counts, n, chosen)
