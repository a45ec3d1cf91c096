"""Neural contextual bandits: NeuralUCB and NeuralTS.

Both are one composition of the scored parts (``parts.scored``), and differ by the rule
and the radius they hand in:

    model        nn.MLP fitted by nn.Trainer (NeuralModel)     f(x; theta)
    uncertainty  linalg (Diagonal)Gram of the gradients g / sqrt(m), Z = lam I + sum g g^T / m
    selection    Optimistic (NeuralUCB, B = 1) or Sampled (NeuralTS, B = sqrt(lam))
    schedule     Periodic(update_every)

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based
        exploration. ICML 2020.
    [Zhang2021] W. Zhang, D. Zhou, L. Li, Q. Gu. Neural Thompson sampling. ICLR 2021.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from banditkit.core import POLICIES
from banditkit.core.params import POSITIVE, Choice, Flag, Int, Real, param
from banditkit.linalg import GRAMS, make_gram
from banditkit.policies.parts.history import History
from banditkit.policies.parts.models import NeuralModel
from banditkit.policies.parts.models.compute import DEVICE, DTYPE, compute_options
from banditkit.policies.parts.schedules import Periodic
from banditkit.policies.parts.scored import LEARNING_PARTS, ScoredParts, ScoredPolicy
from banditkit.policies.parts.scorer import Scorer
from banditkit.policies.parts.selection import ArmRule, Optimistic, Sampled

if TYPE_CHECKING:
    import torch

    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch: imported at first use

__all__ = ["LOSS_REDUCTIONS", "NeuralBandit", "NeuralTS", "NeuralUCB"]

LOSS_REDUCTIONS = {"mean_scaled": "mean", "sum": "sum"}
#: Gradient methods of the training (``nn.StackedMLP.forward_vjp``).
GRAD_METHODS = ("auto", "torch.func", "backprop")
#: Retries at lr / 10 of a diverging refit (``NeuralModel.backtrack``).
BACKTRACK = 3


class NeuralBandit(ScoredPolicy):
    """The hyper-parameters and the parts of NeuralUCB and NeuralTS.

    ``_parts`` composes the model, the Gram and the schedule around the rule and the
    radius that each algorithm hands in.

    Args:
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
            lr kept for later refits; >= 0 (3; 0 takes every refit as it ends). A refit
            that still diverges (non-finite, or 100 times its start) is retried at
            lr / 10 until it settles (``parts.models.rescue``), whatever ``backtrack``.
        dtype: "float32" (default since 2026-12-06; docs/performance.md, "The default
            dtype") or "float64" (the default before): the dtype of the network, its
            training and its gradients g; the Gram Z and its log-determinant stay
            float64 (docs/performance.md, "Neural training speed").
        device: "cpu" (default), "cuda", "cuda:N" or "auto" (the first CUDA device if
            PyTorch sees one, else the CPU): where the network, its training, its
            history and the Gram Z live (``policies.parts.models.compute``); a device
            that is not there is a ``ValueError`` naming it.
        grouped: Train on the distinct rows with their counts and mean rewards (the
            same gradient, iterates equal up to rounding; O(K) per GD step on a fixed
            arm set instead of O(t)); False (default) trains on every row.
        grad_method: Kept so that configs and run ids written before stay valid; it no
            longer changes anything: ``nn`` chooses its backward pass itself (the
            explicit pass for every depth, equal to torch.func; docs/trainer.md).
        block_input: Kept for the same reason; ``nn.fit`` detects block-encoded arms
            and trains them on their block of the first layer by itself.
    """

    contract_params = {"width": 8, "update_every": 3, "steps": 10}  # noqa: RUF012

    nu: float = param(Real(low=0.0), default=0.1)
    lam: float = param(POSITIVE, default=0.01)
    width: int = param(Int(low=2, even=True), default=100)
    depth: int = param(Int(low=2), default=2)
    lr: float = param(POSITIVE, default=0.01)
    steps: int = param(Int(low=1), default=50)
    update_every: int = param(Int(low=1), default=20)
    gram: str = param(Choice(GRAMS), default="diagonal")
    loss_reduction: str = param(Choice(LOSS_REDUCTIONS), default="mean_scaled")
    backtrack: int = param(Int(low=0), default=BACKTRACK)
    dtype: str = DTYPE
    device: str = DEVICE
    grouped: bool = param(Flag(), default=False)
    grad_method: str = param(Choice(GRAD_METHODS), default="auto")
    block_input: bool = param(Flag(), default=True)

    def _parts(
        self, d: int, generator: torch.Generator, rule: ArmRule, radius: float
    ) -> ScoredParts:
        # [Zhou2020, Alg. 1]: sum (f - r)^2 / 2 + m lam ||theta - theta_0||^2 / 2
        trainer = nn.Trainer(
            loss="mse",
            lam=self.width * self.lam,
            center="init",
            lr=self.lr,
            steps=self.steps,
            reduction=LOSS_REDUCTIONS[self.loss_reduction],
        )
        model = NeuralModel(
            d,
            width=self.width,
            depth=self.depth,
            trainer=trainer,
            generator=generator,
            backtrack=self.backtrack,
            dtype=self.dtype,
            device=self.device,
            grouped=self.grouped,
        )
        scorer = Scorer(
            model,
            make_gram(self.gram, model.n_params, self.lam),
            nu=self.nu,
            radius=lambda d_eff: radius,
            feature_scale=1.0
            / math.sqrt(self.width),  # [Zhou2020, Alg. 1]: Z += g g^T / m
        )
        return ScoredParts(History(d), scorer, rule, Periodic(self.update_every))

    @property
    def reads_distinct_rows(self) -> bool:
        """Whether a round costs in proportion to the distinct rows (``grouped``).

        Read by ``reproduce --plan`` (``plan.costs``).
        """
        return self.grouped

    def _stackable(self) -> bool:
        """Seeds batch with a diagonal Z, depth 2, every row trained on, on the CPU.

        The parts then have stacked forms (``parts.stacked``: S seeds play one round
        and their networks train as one ``nn.fit`` stack, each on its own rows);
        other configurations run seed by seed (docs/experiments.md, "Seed batching").
        """
        return (
            self.gram == "diagonal"
            and self.depth == 2
            and not self.grouped
            and compute_options(self)["device"] == "cpu"
        )


@POLICIES.register("neural-ucb")
class NeuralUCB(NeuralBandit):
    """NeuralUCB [Zhou2020, Alg. 1]: play the arm with the largest upper confidence bound.

        score(k) = f(x_k; theta) + nu * sqrt(g_k^T Z^-1 g_k / width),

    where g_k = grad_theta f(x_k; theta) and Z = lam * I + sum of g g^T / width over
    the arms played so far (diagonal by default), and theta minimises

        sum_i (f(x_i; theta) - r_i)^2 / 2 + width * lam / 2 * ||theta - theta_0||^2

    by ``steps`` GD steps after every ``update_every`` rounds.

    Symbols: lam = λ, nu = ν, width = m, depth = L, lr = η, steps = J.

    The other arguments are ``NeuralBandit``'s.

    Args:
        nu: Exploration scale, >= 0 (0.1). Zero gives the greedy policy.
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

    #: What an update changes inside (``core.transaction``): the rest it only rebinds.
    _undo_parts: ClassVar[tuple[str, ...]] = LEARNING_PARTS

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        return self._parts(d, generator, Optimistic(), radius=1.0)


@POLICIES.register("neural-ts")
class NeuralTS(NeuralBandit):
    """NeuralTS [Zhang2021, Alg. 1]: sample a reward per arm, play the largest sample.

        r_k ~ N(f(x_k; theta), nu^2 * lam * g_k^T Z^-1 g_k / width)

    with Z, theta and the training schedule as in ``NeuralUCB``.

    Symbols: lam = λ, nu = ν (exploration variance scale), width = m, depth = L.

    The other arguments are ``NeuralBandit``'s.

    Args:
        nu: Exploration scale, >= 0. Zero gives the greedy policy.
        seed: Seed of the policy's own stream (initialisation and samples).

    Notes:
        Deviation and Assumption as in ``NeuralUCB``.

    Example:
        >>> from banditkit.core import Context
        >>> policy = NeuralTS(width=4, steps=5, seed=0)
        >>> policy.act(Context(arms=np.eye(3))) in range(3)
        True
    """

    #: The same parts as ``NeuralUCB`` (``core.transaction`` reads the exact class).
    _undo_parts: ClassVar[tuple[str, ...]] = NeuralUCB._undo_parts

    def _compose(self, d: int, generator: torch.Generator) -> ScoredParts:
        # [Zhang2021, Alg. 1]: sigma_k = nu sqrt(lam) ||g_k / sqrt(m)||_{Z^-1}
        return self._parts(d, generator, Sampled(), radius=math.sqrt(self.lam))
