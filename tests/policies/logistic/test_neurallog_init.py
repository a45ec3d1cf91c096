"""The ``init`` option of the NeuralLog policies: the network's initialisation.

"mirrored" (default) is the NTK initialisation of the theory (first-layer variance 4/m,
f(x; theta_0) = 0); "standard" scales the hidden layers by their fan-in, which keeps the
pre-activations of large block inputs (mnist: ||x||^2 = 168) near unit variance
(docs/logistic.md, section "Fidelity", mnist).
"""

from __future__ import annotations

import numpy as np
import pytest

import banditkit as bk
from banditkit.core import Context

D = 400  # fan-in of the first layer: large, so the sample variances are tight
WIDTH = 20


def _first_layer(init: str) -> np.ndarray:
    policy = bk.make_policy("neurallog-ucb2", init=init, width=WIDTH, seed=3)
    rng = np.random.default_rng(0)
    policy.act(Context(arms=rng.uniform(-1, 1, size=(3, D))))
    weight = next(iter(policy.model.mlp.parameters()))
    return weight.detach().numpy()


@pytest.mark.parametrize(
    ("init", "variance"), [("mirrored", 4.0 / WIDTH), ("standard", 2.0 / D)]
)
def test_first_layer_variance_follows_the_init(init: str, variance: float) -> None:
    w = _first_layer(init)
    assert w.shape == (WIDTH, D)
    # 8000 draws (4000 distinct under the mirrored init): a 10 % band is > 4 sigma
    assert abs(w.var() / variance - 1.0) < 0.1, (w.var(), variance)


def test_standard_init_keeps_block_inputs_pre_activations_near_unit_scale() -> None:
    # a block-encoded row of 40 pixels at -1 among K = 10 blocks: ||x||^2 = 40
    x = np.zeros(D)
    x[:40] = -1.0
    pre = {init: _first_layer(init) @ x for init in ("mirrored", "standard")}
    assert np.var(pre["mirrored"]) > 10 * np.var(pre["standard"]), pre


def test_the_default_is_unchanged_and_mirrored_starts_at_zero() -> None:
    assert bk.make_policy("neurallog-ucb1").init == "mirrored"
    policy = bk.make_policy("ncbf-ucb", width=8, seed=0)
    rng = np.random.default_rng(1)
    ctx = Context(arms=rng.uniform(-1, 1, size=(4, 6)))
    mean, _ = (policy.act(ctx), policy.scores(ctx))[1]
    np.testing.assert_array_equal(mean, np.zeros(4))


def test_init_is_validated() -> None:
    with pytest.raises(ValueError, match="init"):
        bk.make_policy("neurallog-ucb2", init="xavier")
    with pytest.raises(ValueError, match="init"):
        bk.make_policy("neurallog-ucb1", mode="theory", init="standard")
