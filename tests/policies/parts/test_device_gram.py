"""The Gram on the model's device: ``linalg.Gram``'s arithmetic in PyTorch, and the paths
of a round that keep the features, the Gram and the widths on an accelerator.

No GPU is needed: ``DeviceGram`` is checked on CPU tensors against ``linalg.Gram``, and the
device paths of the policies are driven on the CPU by declaring the CPU an accelerator
(``on_accelerator``), which must leave every action of a float64 run unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.linalg import Gram
from banditkit.policies.parts import scorer as scorer_module
from banditkit.policies.parts.models import device_gram
from banditkit.policies.parts.models.device_gram import DeviceGram, gram_for, to_host
from banditkit.testing import scripted_env

CPU = torch.device("cpu")


def _pair(d: int = 6, lam: float = 0.7, refactor_every: int = 512):
    return Gram(d, lam, refactor_every=refactor_every), DeviceGram(
        d, lam, device=CPU, refactor_every=refactor_every
    )


@pytest.mark.parametrize("refactor_every", [1, 3, 512])
def test_rank1_updates_match_the_numpy_gram(refactor_every):
    rng = np.random.default_rng(0)
    ref, dev = _pair(refactor_every=refactor_every)
    for _ in range(10):
        x, w = rng.normal(size=6), float(rng.uniform(0.1, 3.0))
        ref.update(x, w)
        dev.update(torch.as_tensor(x), w)
    Z = rng.normal(size=(5, 6))
    np.testing.assert_allclose(dev.inverse, ref.inverse, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dev.matrix, ref.matrix, rtol=0, atol=1e-12)
    assert dev.logdet == pytest.approx(ref.logdet, abs=1e-10)
    np.testing.assert_allclose(dev.norms(Z), ref.norms(Z), atol=1e-10)
    np.testing.assert_allclose(dev.pair_norms(Z), ref.pair_norms(Z), atol=1e-10)
    np.testing.assert_allclose(dev.solve(Z[0]), ref.solve(Z[0]), atol=1e-10)
    assert dev.n_updates == ref.n_updates == 10


def test_batch_and_ridge_match_and_equal_rows_are_zero_apart():
    rng = np.random.default_rng(1)
    ref, dev = _pair()
    X, w = rng.normal(size=(20, 6)), rng.uniform(0.5, 2.0, size=20)
    ref.update_batch(X, w)
    dev.update_batch(torch.as_tensor(X), torch.as_tensor(w))
    ref.set_ridge(2.0)
    dev.set_ridge(2.0)
    np.testing.assert_allclose(dev.inverse, ref.inverse, atol=1e-12)
    assert dev.logdet == pytest.approx(ref.logdet, abs=1e-10)
    Z = np.vstack([X[:3], X[:1]])  # rows 0 and 3 are equal
    norms = dev.pair_norms(Z)
    assert norms[0, 3] == norms[3, 0] == 0.0 and np.all(np.diag(norms) == 0.0)
    np.testing.assert_allclose(norms, ref.pair_norms(Z), atol=1e-10)


def test_state_round_trip_and_bad_input():
    rng = np.random.default_rng(2)
    _, dev = _pair()
    dev.update(rng.normal(size=6), 2.0)
    again = DeviceGram(6, 0.7, device="cpu")
    again.load_state_dict(dev.state_dict())
    Z = rng.normal(size=(4, 6))
    np.testing.assert_array_equal(again.pair_norms(Z), dev.pair_norms(Z))
    assert again.logdet == dev.logdet
    with pytest.raises(ValueError, match="d=3"):
        DeviceGram(3, 1.0, device="cpu").load_state_dict(dev.state_dict())
    with pytest.raises(ValueError, match="weight"):
        dev.update(np.ones(6), 0.0)
    with pytest.raises(ValueError, match=r"shape \(6,\)"):
        dev.update(np.ones(5))


def test_one_transfer_and_the_switch():
    mean, widths = to_host(torch.arange(3.0), torch.ones(3, 3, dtype=torch.float64))
    assert mean.tolist() == [0.0, 1.0, 2.0] and widths.shape == (3, 3)

    class Model:
        device = CPU

    assert type(gram_for(Model(), 4, 1.0)) is Gram  # the NumPy default path


def _actions(name: str, family: str, horizon: int = 14, **params: object) -> list:
    policy = bk.make_policy(name, seed=5, **params)
    binary = getattr(policy, "reward_kind", "real") == "binary"
    env = scripted_env(family, reward_kind="binary") if binary else scripted_env(family)
    return [
        np.asarray(a).tolist() for a in bk.simulate(policy, env, horizon, 2).actions
    ]


@pytest.mark.parametrize(
    ("name", "family", "params"),
    [
        ("nvldb-ucb", "dueling", {"width": 8, "steps": 3}),
        ("nvldb-ts", "dueling", {"width": 8, "steps": 3, "gram_mode": "incremental"}),
        ("neural-ucb", "contextual", {"width": 8, "gram": "full", "steps": 3}),
        ("neural-ts", "contextual", {"width": 8, "gram": "full", "steps": 3}),
        ("neurallog-ucb2", "contextual", {"width": 8, "gram": "full", "steps": 3}),
        ("neurallog-ts1", "contextual", {"width": 8, "gram": "full", "steps": 3}),
    ],
)
def test_the_device_path_takes_the_numpy_path_actions(
    monkeypatch, name, family, params
):
    """float64 on the device path (Gram, features and widths as tensors) = NumPy path."""
    host = _actions(name, family, **params)
    monkeypatch.setattr(device_gram, "on_accelerator", lambda device: True)
    monkeypatch.setattr(scorer_module, "on_accelerator", lambda device: True)
    seen: list[object] = []
    original = DeviceGram.__init__

    def spy(self, *args, **kwargs):
        seen.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(DeviceGram, "__init__", spy)
    assert _actions(name, family, **params) == host
    assert seen  # the device path ran
