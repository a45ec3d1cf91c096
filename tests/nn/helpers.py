"""Seeded float64 draws shared by the nn tests."""

import torch


def gen(seed: int) -> torch.Generator:
    """A torch generator seeded with ``seed``."""
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    """Standard normal float64 draws of ``shape``."""
    return torch.randn(*shape, generator=gen(seed), dtype=torch.float64)


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    """Uniform [0, 1) float64 draws of ``shape``."""
    return torch.rand(*shape, generator=gen(seed), dtype=torch.float64)
