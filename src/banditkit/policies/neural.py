"""Neural contextual bandits: NeuralUCB, NeuralTS, NeuralLog-UCB/TS and NCBF-UCB.

Each policy here is a choice of the same four parts (``policies.scored``):

    model        nn.MLP fitted by nn.Trainer (NeuralModel)     f(x; theta)
    uncertainty  linalg (Diagonal)Gram of nn.forward_and_grads  ||g||_{A^-1}, radius B(d_eff)
    selection    optimistic_argmax or gaussian_sample
    schedule     Periodic(update_every)

Practical mode ([Bae2025, Sec. 7, App. A]; specs/logistic.md Sec. 2.5-2.6), the default
and so far the only mode: gradients g = g(x; theta_{t-1}) at the current network, no
1/sqrt(m), a fixed lam, training every ``update_every`` rounds with ``steps`` full-batch
GD steps at ``lr`` on all data (warm start), and a diagonal A. With c_S = 1 + sqrt(L) S
+ L S^2 and R = 1/4 (table 2.6 of the spec; Reconstruction):

    policy           mean       A                                   B (times nu)
    NCBF-UCB         f          kappa lam + sum g^2                 kappa sqrt(d_eff) + S sqrt(kappa lam) + 1
    NeuralLog-UCB-1  mu(f)      kappa lam + sum g^2                 R sqrt(kappa) [c_S (sqrt(d_eff) + sqrt(L/lam)) + 1]
    NeuralLog-UCB-2  f          lam + sum mu'(f(x_i; theta_i)) g^2  c_S (sqrt(d_eff) + sqrt(L/lam)) + 1
    NeuralLog-TS-1   N(f, s^2)  as UCB-1                            s = sqrt(kappa) [c_S (...) + 1] ||g||_{A^-1}
    NeuralLog-TS-2   N(f, s^2)  as UCB-2                            s = [c_S (...) + 1] ||g||_{A^-1}

with d_eff = sum_j log(1 + a sum_i g_ij^2), a = 1/kappa for NCBF-UCB and R otherwise.

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Verma2025] A. Verma, Z. Dai, X. Lin, P. Jaillet, B. K. H. Low. Neural dueling
        bandits: preference-based optimization with human feedback. ICLR 2025.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from banditkit.core import POLICIES
from banditkit.core.validation import check_choice, check_int, check_scalar
from banditkit.glm import LogisticLink
from banditkit.nn import Trainer
from banditkit.policies.neural_parts import GRAMS, NeuralModel
from banditkit.policies.scored import R_LOGISTIC, ScoredPolicy

__all__ = [
    "NCBFUCB",
    "NeuralLogPolicy",
    "NeuralLogTS1",
    "NeuralLogTS2",
    "NeuralLogUCB1",
    "NeuralLogUCB2",
    "NeuralTS",
    "NeuralUCB",
]

MODES = ("practical",)
LOSS_REDUCTIONS = {"mean_scaled": "mean", "sum": "sum"}
_LINK = LogisticLink()


def _check_width(width: int) -> int:
    width = check_int("width", width, low=2)
    if width % 2:
        raise ValueError(f"width must be an even int >= 2; got {width!r}.")
    return width


@POLICIES.register("neural-ucb")
class NeuralUCB(ScoredPolicy):
    """NeuralUCB [Zhou2020, Alg. 1]: play the arm with the largest upper confidence bound.

        score(k) = f(x_k; theta) + nu * sqrt(g_k^T Z^-1 g_k / width),

    where g_k = grad_theta f(x_k; theta) and Z = lam * I + sum of g g^T / width over
    the arms played so far (diagonal by default), and theta minimises

        sum_i (f(x_i; theta) - r_i)^2 / 2 + width * lam / 2 * ||theta - theta_0||^2

    by ``steps`` GD steps after every ``update_every`` rounds.

    Symbols: lam = λ, nu = ν, width = m, depth = L, lr = η, steps = J.

    Args:
        nu: Exploration scale, >= 0. Zero gives the greedy policy.
        lam: Gram start Z_0 = lam * I and weight of the L2 term in training, > 0.
        width: Hidden units per layer m; even, for the mirrored initialisation.
        depth: Number of linear layers L, >= 2.
        lr: Step size of the trainer, > 0.
        steps: GD steps per refit, >= 1.
        update_every: Refit after every this many rounds (1: every round, as in
            [Zhou2020]), >= 1.
        gram: "diagonal" (default, the practical version of [Zhou2020, Sec. 7]) or
            "full" (p x p; only for small networks).
        loss_reduction: "mean_scaled" (default: GD on the objective divided by the
            number n of observations, same minimiser) or "sum" (the paper's objective).
        seed: Seed of the policy's own stream (initialisation and tie-breaks).

    Shapes:
        arms (K, d); g (K, p) with p = width * d + width for depth 2.

    Notes:
        Deviation: the objective is divided by n before each GD step by default
        (specs/logistic.md Sec. 7.1); the original paper takes J GD steps on the sum.
        Assumption: training warm-starts from the current theta, as the reference code.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralUCB(width=4, steps=5, seed=0)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def __init__(
        self,
        *,
        nu: float = 1.0,
        lam: float = 1.0,
        width: int = 20,
        depth: int = 2,
        lr: float = 0.01,
        steps: int = 100,
        update_every: int = 1,
        gram: str = "diagonal",
        loss_reduction: str = "mean_scaled",
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.nu = check_scalar("nu", nu, low=0.0)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.width = _check_width(width)
        self.depth = check_int("depth", depth, low=2)
        self.lr = check_scalar("lr", lr, low=0.0, low_open=True)
        self.steps = check_int("steps", steps, low=1)
        self.update_every = check_int("update_every", update_every, low=1)
        self.gram = check_choice("gram", gram, GRAMS)
        self.loss_reduction = check_choice(
            "loss_reduction", loss_reduction, list(LOSS_REDUCTIONS)
        )

    def _make_model(self, d: int, generator: torch.Generator) -> NeuralModel:
        # [Zhou2020, Alg. 1]: sum (f - r)^2 / 2 + m lam ||theta - theta_0||^2 / 2
        trainer = Trainer(
            loss="mse",
            lam=self.width * self.lam,
            center="init",
            lr=self.lr,
            steps=self.steps,
            reduction=LOSS_REDUCTIONS[self.loss_reduction],
        )
        return NeuralModel(
            d, width=self.width, depth=self.depth, trainer=trainer, generator=generator
        )

    def _ridge(self) -> float:
        return self.lam

    def _feature_scale(self) -> float:
        return 1.0 / math.sqrt(self.width)  # [Zhou2020, Alg. 1]: Z += g g^T / m

    def _effdim_scale(self) -> float | None:
        return None

    def _radius(self, d_eff: float) -> float:
        return 1.0


@POLICIES.register("neural-ts")
class NeuralTS(NeuralUCB):
    """NeuralTS [Zhang2021, Alg. 1]: sample a reward per arm, play the largest sample.

        r_k ~ N(f(x_k; theta), nu^2 * lam * g_k^T Z^-1 g_k / width)

    with Z, theta and the training schedule as in ``NeuralUCB``.

    Symbols: lam = λ, nu = ν (exploration variance scale), width = m, depth = L.

    Args:
        nu: Exploration scale, >= 0. Zero gives the greedy policy.
        lam: Gram start Z_0 = lam * I and weight of the L2 term in training, > 0.
        width: Hidden units per layer m; even.
        depth: Number of linear layers L, >= 2.
        lr: Step size of the trainer, > 0.
        steps: GD steps per refit, >= 1.
        update_every: Refit after every this many rounds (1: every round), >= 1.
        gram: "diagonal" (default) or "full".
        loss_reduction: "mean_scaled" (default) or "sum"; see ``NeuralUCB``.
        seed: Seed of the policy's own stream (initialisation and samples).

    Notes:
        Deviation and Assumption as in ``NeuralUCB``.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralTS(width=4, steps=5, seed=0)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    sampling = True

    def _radius(self, d_eff: float) -> float:
        return math.sqrt(self.lam)


class NeuralLogPolicy(ScoredPolicy):
    """Shared hyper-parameters of the practical NeuralLog policies [Bae2025, Sec. 7].

    theta minimises the regularised cross-entropy of the practical mode,

        J(theta) = sum_i BCE(r_i, f(x_i; theta)) + lam * ||theta||^2,

    by ``steps`` full-batch GD steps at ``lr`` after every ``update_every`` rounds,
    warm-started; A, B and the mean are set per algorithm (module docstring).

    Args:
        nu: Exploration scale, >= 0 (grid-searched in the paper). Zero is greedy.
        lam: Fixed regulariser lam > 0 (grid-searched in the paper).
        kappa: Inverse of the smallest link slope, >= 1, fed to the algorithm
            (10 in the paper's synthetic and classification runs, 50 for OBD).
        S: Norm bound on the parameter, > 0 (1 in the paper).
        width: Hidden units per layer m; even (20 in the paper).
        depth: Number of linear layers L, >= 2 (2 in the paper).
        lr: GD step size, > 0 (0.01).
        steps: GD steps per refit, >= 1 (100).
        update_every: Refit after every this many rounds, >= 1 (50).
        gram: "diagonal" (default, the paper's approximation of A and of d_eff) or
            "full" (exact p x p matrices).
        mode: "practical" (the only mode implemented so far).
        loss_reduction: "mean_scaled" (default: GD on J / n, same minimiser, stable at
            lr 0.01) or "sum" (J itself, which diverges for large n).
        seed: Seed of the policy's own stream (initialisation, tie-breaks, samples).
    """

    def __init__(
        self,
        *,
        nu: float = 1.0,
        lam: float = 1.0,
        kappa: float = 10.0,
        S: float = 1.0,
        width: int = 20,
        depth: int = 2,
        lr: float = 0.01,
        steps: int = 100,
        update_every: int = 50,
        gram: str = "diagonal",
        mode: str = "practical",
        loss_reduction: str = "mean_scaled",
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.nu = check_scalar("nu", nu, low=0.0)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.kappa = check_scalar("kappa", kappa, low=1.0)
        self.S = check_scalar("S", S, low=0.0, low_open=True)
        self.width = _check_width(width)
        self.depth = check_int("depth", depth, low=2)
        self.lr = check_scalar("lr", lr, low=0.0, low_open=True)
        self.steps = check_int("steps", steps, low=1)
        self.update_every = check_int("update_every", update_every, low=1)
        self.gram = check_choice("gram", gram, GRAMS)
        self.mode = check_choice("mode", mode, MODES)
        self.loss_reduction = check_choice(
            "loss_reduction", loss_reduction, list(LOSS_REDUCTIONS)
        )

    def _make_model(self, d: int, generator: torch.Generator) -> NeuralModel:
        # [Bae2025, Sec. 7]: lam ||theta||^2 (centred at 0, no 1/2); the trainer's
        # term is (lam' / 2) ||theta||^2, so lam' = 2 lam.
        trainer = Trainer(
            loss="bce",
            lam=2.0 * self.lam,
            center="zero",
            lr=self.lr,
            steps=self.steps,
            reduction=LOSS_REDUCTIONS[self.loss_reduction],
        )
        return NeuralModel(
            d, width=self.width, depth=self.depth, trainer=trainer, generator=generator
        )

    def _c_s(self) -> float:
        """c_S = 1 + sqrt(L) S + L S^2 [Bae2025, Eq. (1)]."""
        L = self.depth
        return 1.0 + math.sqrt(L) * self.S + L * self.S**2

    def _iota(self, d_eff: float) -> float:
        """c_S (sqrt(d_eff) + sqrt(L / lam)) + 1, the practical nu_t of Eqs. (1), (4)."""
        return self._c_s() * (math.sqrt(d_eff) + math.sqrt(self.depth / self.lam)) + 1


@POLICIES.register("neurallog-ucb1")
class NeuralLogUCB1(NeuralLogPolicy):
    """NeuralLog-UCB-1 [Bae2025, Alg. 1; practical mode of Sec. 7, App. A].

        score(k) = mu(f(x_k; theta)) + nu * B * ||g_k||_{V^-1},
        V = kappa lam I + sum_i g(x_i; theta_{i-1})^2            (diagonal),
        B = R sqrt(kappa) [c_S (sqrt(d_eff) + sqrt(L / lam)) + 1],
        d_eff = sum_j log(1 + R sum_i g_ij^2),  c_S = 1 + sqrt(L) S + L S^2,  R = 1/4.

    Symbols: nu = ν, lam = λ, kappa = κ, S = S, width = m, depth = L, lr = η, steps = J.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: B keeps the orders in kappa, S, lam and d_eff of R sqrt(kappa)
        nu_t^(1) (Eq. (1)) with iota_t ~ sqrt(d_eff) + sqrt(L / lam); log(4t^2/delta)
        factors are dropped (specs/logistic.md table 2.6).
        Deviation: GD on J / n by default (``loss_reduction``).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogUCB1(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _ridge(self) -> float:
        return self.kappa * self.lam

    def _mean(self, latent: np.ndarray) -> np.ndarray:
        return _LINK.mean(latent)

    def _radius(self, d_eff: float) -> float:
        return R_LOGISTIC * math.sqrt(self.kappa) * self._iota(d_eff)


@POLICIES.register("neurallog-ucb2")
class NeuralLogUCB2(NeuralLogPolicy):
    """NeuralLog-UCB-2 [Bae2025, Alg. 2; practical mode of Sec. 7, App. A].

        score(k) = f(x_k; theta) + nu * B * ||g_k||_{W^-1},
        W = lam I + sum_i mu'(f(x_i; theta_i)) g(x_i; theta_{i-1})^2   (diagonal),
        B = c_S (sqrt(d_eff) + sqrt(L / lam)) + 1,
        d_eff = sum_j log(1 + R sum_i g_ij^2),

    where theta_i is the parameter after round i's refit (theta_{i-1} when round i did
    not refit); each weight is frozen once added. No kappa (and no R) enters the rule,
    so the selections do not depend on ``kappa``.

    Symbols: nu = ν^(2), lam = λ, S = S, width = m, depth = L, lr = η, steps = J.
    Args: see ``NeuralLogPolicy`` (``kappa`` is accepted and unused).

    Notes:
        Reconstruction: B mirrors nu_t^(2) of Eq. (4) (specs/logistic.md table 2.6).
        Deviation: GD on J / n by default (``loss_reduction``).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogUCB2(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    weighted = True

    def _ridge(self) -> float:
        return self.lam

    def _radius(self, d_eff: float) -> float:
        return self._iota(d_eff)


@POLICIES.register("neurallog-ts1")
class NeuralLogTS1(NeuralLogUCB1):
    """NeuralLog-TS-1 [Bae2025, App. I; practical mode]: Gaussian sample per arm.

        r_k ~ N(f(x_k; theta), s_k^2),
        s_k = nu * sqrt(kappa) [c_S (sqrt(d_eff) + sqrt(L / lam)) + 1] * ||g_k||_{V^-1},

    with V and d_eff as in ``NeuralLogUCB1``; play argmax_k r_k.

    Symbols: nu = ν̃, lam = λ, kappa = κ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: s follows table 2.6 of specs/logistic.md (sqrt(kappa lam_t)
        ||g||_{V^-1} times nu_t^(1) / sqrt(lam_t)); the sample is on the latent scale.
        Assumption: anytime, the current d_eff replaces the horizon value nu_T.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogTS1(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    sampling = True

    def _radius(self, d_eff: float) -> float:
        return math.sqrt(self.kappa) * self._iota(d_eff)


@POLICIES.register("neurallog-ts2")
class NeuralLogTS2(NeuralLogUCB2):
    """NeuralLog-TS-2 [Bae2025, Remark I.2; practical mode]: Gaussian sample per arm.

        r_k ~ N(f(x_k; theta), s_k^2),
        s_k = nu * [c_S (sqrt(d_eff) + sqrt(L / lam)) + 1] * ||g_k||_{W^-1},

    with the variance-weighted W and d_eff of ``NeuralLogUCB2``; no kappa enters.

    Symbols: nu = ν', lam = λ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy`` (``kappa`` is accepted and unused).

    Notes:
        Reconstruction: table 2.6 of specs/logistic.md (the square on sigma' restored).
        Assumption: anytime, the current d_eff replaces the horizon value.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralLogTS2(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    sampling = True


@POLICIES.register("ncbf-ucb")
class NCBFUCB(NeuralLogPolicy):
    """NCBF-UCB [Verma2025] as run in [Bae2025, Sec. 7] (binary-feedback variant).

        score(k) = f(x_k; theta) + nu * B * ||g_k||_{V^-1},
        V = kappa lam I + sum_i g(x_i; theta_{i-1})^2            (diagonal),
        B = kappa sqrt(d_eff) + S sqrt(kappa lam) + 1,
        d_eff = sum_j log(1 + sum_i g_ij^2 / kappa).

    Symbols: nu = ν, lam = λ, kappa = κ, S = S, width = m, depth = L.
    Args: see ``NeuralLogPolicy``.

    Notes:
        Reconstruction: B keeps the kappa-linear width of [Verma2025]
        (beta_T = kappa sqrt(d_eff + 2 log(1/delta)), log factor dropped) and the d_eff
        of [Bae2025, App. A] (specs/logistic.md Sec. 3.1, table 2.6).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NCBFUCB(width=4, steps=5)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def _ridge(self) -> float:
        return self.kappa * self.lam

    def _effdim_scale(self) -> float | None:
        return 1.0 / self.kappa

    def _radius(self, d_eff: float) -> float:
        return (
            self.kappa * math.sqrt(d_eff)
            + self.S * math.sqrt(self.kappa * self.lam)
            + 1
        )
