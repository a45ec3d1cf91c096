"""MLP's cached weight blocks (no-grad forwards) never go stale."""

import copy

import torch

from banditkit.nn import MLP, flat_params, set_flat_params


def fresh_forward(model: MLP, X: torch.Tensor) -> torch.Tensor:
    """The forward with gradients on: the blocks are copied anew."""
    return model(X).detach()


def test_cached_forward_equals_the_uncached_one_across_updates():
    model = MLP(4, width=6, generator=torch.Generator().manual_seed(0))
    X = torch.randn(
        5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        assert torch.equal(model(X), fresh_forward(model, X))
        assert torch.equal(model(X), fresh_forward(model, X))  # from the cache
        for param in model.parameters():  # an in-place step, as the trainer's
            param.sub_(0.1 * torch.ones_like(param))
        assert torch.equal(model(X), fresh_forward(model, X))
    set_flat_params(model, flat_params(model) * 1.5)
    with torch.no_grad():
        assert torch.equal(model(X), fresh_forward(model, X))
    assert bool((model(X) != 0).any())  # an update that changes f


def test_a_deep_copy_does_not_reuse_the_original_blocks():
    model = MLP(4, width=6, generator=torch.Generator().manual_seed(0))
    X = torch.randn(
        3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    with torch.no_grad():
        model(X)  # fills the cache
        twin = copy.deepcopy(model)
        set_flat_params(twin, torch.zeros(twin.n_params, dtype=torch.float64))
        assert torch.equal(twin(X), torch.zeros(3, dtype=torch.float64))
        assert torch.equal(model(X), fresh_forward(model, X))
