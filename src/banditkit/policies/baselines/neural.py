"""Neural contextual bandits: NeuralUCB and NeuralTS, and the shared neural base.

Each neural policy (here and in ``policies.neurallog``) is a choice of the same four
parts (``policies.scored``):

    model        nn.MLP fitted by nn.Trainer (NeuralModel)     f(x; theta)
    uncertainty  linalg (Diagonal)Gram of nn.forward_and_grads  ||g||_{A^-1}, radius B(d_eff)
    selection    optimistic_argmax or gaussian_sample
    schedule     Periodic(update_every)

``NeuralScoredPolicy`` validates the network hyper-parameters once for all of them.

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from banditkit.core import POLICIES
from banditkit.core.validation import check_bool, check_choice, check_int, check_scalar
from banditkit.glm import LogisticLink
from banditkit.linalg import GRAMS
from banditkit.policies.parts.models import NeuralModel
from banditkit.policies.parts.models.neural import DTYPES
from banditkit.policies.parts.scored import ScoredPolicy

if TYPE_CHECKING:
    import torch

__all__ = ["LOSS_REDUCTIONS", "NeuralScoredPolicy", "NeuralTS", "NeuralUCB"]

MODES = ("practical", "theory")
LOSS_REDUCTIONS = {"mean_scaled": "mean", "sum": "sum"}
REG_CENTERS = ("zero", "init")
MEAN_SCALES = ("probability", "latent")
#: Gradient methods of the training (``nn.StackedMLP.forward_vjp``).
GRAD_METHODS = ("auto", "torch.func", "backprop")
LAMBDA_SCHEDULES = ("fixed", "adaptive")
_LINK = LogisticLink()
#: Retries at lr / 10 of a diverging refit (``NeuralModel.backtrack``).
BACKTRACK = 3


class NeuralScoredPolicy(ScoredPolicy):
    """ScoredPolicy with the network hyper-parameters shared by every neural policy.

    ``_set_network`` validates them once, for ``NeuralUCB`` / ``NeuralTS`` and the
    NeuralLog family alike; each concrete class still lists its keyword parameters
    in its own ``__init__`` (``get_params`` reads the signature).
    """

    width: int
    depth: int
    lr: float | None
    steps: int
    loss_reduction: str
    contract_params = {"width": 8, "update_every": 3, "steps": 10}  # noqa: RUF012

    def _set_network(
        self,
        *,
        width: int,
        depth: int,
        lr: float | None,
        steps: int,
        update_every: int,
        gram: str,
        loss_reduction: str,
    ) -> None:
        """Validate and store the network and training hyper-parameters.

        Stores width (even, >= 2), depth (>= 2), lr (> 0, or None), steps (>= 1),
        update_every (>= 1), gram ("diagonal" or "full") and loss_reduction.
        """
        width = check_int("width", width, low=2)
        if width % 2:
            raise ValueError(f"width must be an even int >= 2; got {width!r}.")
        self.width = width
        self.depth = check_int("depth", depth, low=2)
        self.lr = None if lr is None else check_scalar("lr", lr, low=0.0, low_open=True)
        self.steps = check_int("steps", steps, low=1)
        self.update_every = check_int("update_every", update_every, low=1)
        self.gram = check_choice("gram", gram, GRAMS)
        self.loss_reduction = check_choice(
            "loss_reduction", loss_reduction, list(LOSS_REDUCTIONS)
        )


@POLICIES.register("neural-ucb")
class NeuralUCB(NeuralScoredPolicy):
    """NeuralUCB [Zhou2020, Alg. 1]: play the arm with the largest upper confidence bound.

        score(k) = f(x_k; theta) + nu * sqrt(g_k^T Z^-1 g_k / width),

    where g_k = grad_theta f(x_k; theta) and Z = lam * I + sum of g g^T / width over
    the arms played so far (diagonal by default), and theta minimises

        sum_i (f(x_i; theta) - r_i)^2 / 2 + width * lam / 2 * ||theta - theta_0||^2

    by ``steps`` GD steps after every ``update_every`` rounds.

    Symbols: lam = λ, nu = ν, width = m, depth = L, lr = η, steps = J.

    Args:
        nu: Exploration scale, >= 0 (0.1). Zero gives the greedy policy.
        lam: Gram start Z_0 = lam * I and weight of the L2 term in training, > 0
            (0.01).
        width: Hidden units per layer m; even, for the mirrored initialisation (100).
        depth: Number of linear layers L, >= 2.
        lr: Step size of the trainer, > 0.
        steps: GD steps per refit, >= 1 (50).
        update_every: Refit after every this many rounds, >= 1 (20; 1: every round,
            as in [Zhou2020]).
        gram: "diagonal" (default, the practical version of [Zhou2020, Sec. 7]) or
            "full" (p x p; only for small networks).
        loss_reduction: "mean_scaled" (default: GD on the objective divided by the
            number n of observations, same minimiser) or "sum" (the paper's objective).
        backtrack: Retries of a refit whose objective ends above where it started
            (or overflows), each from the parameters before it at lr / 10, the smaller
            lr kept for later refits; >= 0 (3; 0 takes every refit as it ends).
        dtype: "float64" (default) or "float32": the dtype of the network, its
            training and its gradients g; the Gram Z and its log-determinant stay
            float64 (docs/performance.md, "Neural training speed").
        grouped: Train on the distinct rows with their counts and mean rewards (the
            same gradient, iterates equal up to rounding; O(K) per GD step on a fixed
            arm set instead of O(t)); False (default) trains on every row.
        grad_method: How the training computes the gradient of the network:
            "auto" (default: torch.func for depth > 2) or "backprop" (an explicit
            reverse pass with batched products, ``nn.StackedMLP.forward_vjp``: the same
            gradient up to rounding, about 2x faster for L = 3, N = 20; the setting of
            the ensemble-sampling reproduction, docs/ensemble.md).
        block_input: Train block-encoded arms (each arm's row is its context in the
            arm's block of a K d vector, zeros elsewhere; detected exactly on the
            history at each refit) on their block of the first layer only
            (``nn.blocks``): the same training up to floating-point order, the first
            layer's products K times smaller (True, default). False trains densely,
            as before (docs/performance.md, "Block-encoded inputs (third pass)").
        seed: Seed of the policy's own stream (initialisation and tie-breaks).

    Shapes:
        arms (K, d); g (K, p) with p = width * d + width for depth 2.

    Notes:
        Deviation: the objective is divided by n before each GD step by default
        (docs/logistic.md, section "Choices where the paper is ambiguous"); the original
        paper takes J GD steps on the sum.
        Assumption: training warm-starts from the current theta, as the reference code.
        Deviation: the defaults (nu 0.1, lam 0.01, width 100, 50 steps every 20 rounds)
            are the settings of the NeuralUCB shuttle benchmark, not the paper's
            schedule (a refit every round): on shuttle and mushroom they cost 1/10 to
            1/15 of the time of the earlier defaults (nu 1, lam 1, width 20, 100 steps
            every round) at lower regret (docs/performance.md, "Defaults of neural-ucb
            and neural-ts"). Pass ``update_every=1`` for the paper's schedule.
        Assumption: a refit whose objective ends above where it started (GD with too
        long a step; e.g. lr 0.01 on mnist, where ||g||^2 is in the thousands) is redone
        from the parameters before it with lr / 10, up to 3 times, and the smaller lr is
        kept for later refits (``backtrack``).

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralUCB(width=4, steps=5, seed=0)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    def __init__(
        self,
        *,
        nu: float = 0.1,
        lam: float = 0.01,
        width: int = 100,
        depth: int = 2,
        lr: float = 0.01,
        steps: int = 50,
        update_every: int = 20,
        gram: str = "diagonal",
        loss_reduction: str = "mean_scaled",
        backtrack: int = BACKTRACK,
        dtype: str = "float64",
        grouped: bool = False,
        grad_method: str = "auto",
        block_input: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(seed=seed)
        self.block_input = check_bool("block_input", block_input)
        self.nu = check_scalar("nu", nu, low=0.0)
        self.grad_method = check_choice("grad_method", grad_method, GRAD_METHODS)
        self.lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self.backtrack = check_int("backtrack", backtrack, low=0)
        self.dtype = check_choice("dtype", dtype, DTYPES)
        self.grouped = check_bool("grouped", grouped)
        self._set_network(
            width=width,
            depth=depth,
            lr=lr,
            steps=steps,
            update_every=update_every,
            gram=gram,
            loss_reduction=loss_reduction,
        )

    def _make_model(self, d: int, generator: torch.Generator) -> NeuralModel:
        # PyTorch is imported here, not when the registry is built
        from banditkit.nn import Trainer

        assert self.lr is not None
        # [Zhou2020, Alg. 1]: sum (f - r)^2 / 2 + m lam ||theta - theta_0||^2 / 2
        trainer = Trainer(
            loss="mse",
            lam=self.width * self.lam,
            center="init",
            lr=self.lr,
            steps=self.steps,
            reduction=LOSS_REDUCTIONS[self.loss_reduction],
            method=self.grad_method,
        )
        return NeuralModel(
            d,
            width=self.width,
            depth=self.depth,
            trainer=trainer,
            generator=generator,
            backtrack=self.backtrack,
            dtype=self.dtype,
            grouped=self.grouped,
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
        backtrack: Retries at lr / 10 of a diverging refit (3); see ``NeuralUCB``.
        dtype: "float64" (default) or "float32"; see ``NeuralUCB``.
        grouped: Train on the distinct rows (see ``NeuralUCB``).
        grad_method: "auto" or "backprop" (see ``NeuralUCB``).
        block_input: Train block-encoded arms on their blocks (see ``NeuralUCB``).
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
