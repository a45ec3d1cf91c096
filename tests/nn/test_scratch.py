"""The trainer's reused memory (nn._scratch): reuse, isolation, and results unchanged."""

import threading

import pytest
import torch

from banditkit.nn import (
    BCE,
    MSE,
    BradleyTerry,
    L2Penalty,
    NeuralLinear,
    Pairs,
    Rows,
    StackedMLP,
    _scratch,
    fit,
)


def _block(like: torch.Tensor) -> torch.Tensor | None:
    return _scratch._THREAD.blocks.get((like.dtype, like.device))


def _in_thread(fn):
    """fn() in a new thread: a fresh thread-local scratch (no block yet)."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as error:  # re-raised in the test's thread
            out["error"] = error

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_allocations_are_aligned_views_of_one_block_reused_by_the_next_use() -> None:
    _in_thread(_allocations_are_aligned_views_of_one_block_reused_by_the_next_use)


def _allocations_are_aligned_views_of_one_block_reused_by_the_next_use() -> None:
    """In a fresh thread (no block yet)."""
    X = torch.zeros(3, dtype=torch.float64)
    with _scratch.scratch(X) as new:
        a, b = new((10, 3)), new((7,))
    block = _block(X)
    assert block is not None and block.numel() >= 1.5 * (32 + 8)  # padded to 64 B
    with _scratch.scratch(X) as new:
        c, d = new((10, 3)), new((7,))
        assert c.data_ptr() == block.data_ptr()  # carved from the kept block
        assert d.data_ptr() - c.data_ptr() == 32 * 8  # 30 elements padded to 32
        assert c.is_contiguous() and c.shape == (10, 3) and d.shape == (7,)
    assert _block(X) is block  # it was large enough: kept as it is
    del a, b


def test_a_use_that_needs_more_keeps_a_larger_block() -> None:
    _in_thread(_a_use_that_needs_more_keeps_a_larger_block)


def _a_use_that_needs_more_keeps_a_larger_block() -> None:
    """In a fresh thread (no block yet)."""
    X = torch.zeros(2, dtype=torch.float32)
    with _scratch.scratch(X) as new:
        new((16,))
    small = _block(X)
    assert small is not None
    with _scratch.scratch(X) as new:
        first = new((16,))  # 64 bytes: fits the kept block (1.5 x 16 entries)
        second = new((1000,))  # beyond the block: a new one for the rest
        second.fill_(1.0)
        assert first.data_ptr() == small.data_ptr()
    grown = _block(X)
    assert grown is not None and grown.numel() == int(1.5 * (16 + 1008))


def test_a_nested_use_and_other_devices_get_fresh_tensors() -> None:
    _in_thread(_a_nested_use_and_other_devices_get_fresh_tensors)


def _a_nested_use_and_other_devices_get_fresh_tensors() -> None:
    """In a fresh thread (no block yet)."""
    X = torch.zeros(2, dtype=torch.float64)
    with _scratch.scratch(X) as outer:
        a = outer((100,))
        with _scratch.scratch(X) as inner:
            b = inner((100,))
            assert inner == X.new_empty
        block = _block(X)
        assert block is None or b.untyped_storage().data_ptr() != (
            block.untyped_storage().data_ptr()
        )
        assert b.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    meta = torch.empty(2, device="meta")
    with _scratch.scratch(meta) as new:
        assert new((3,)).device.type == "meta"


def _fits(dtype: torch.dtype) -> dict[str, tuple[torch.Tensor, ...]]:
    """One fit of every pass the trainer builds: flat parameters and the history."""
    g = torch.Generator().manual_seed(3)
    X = torch.randn(60, 5, generator=g, dtype=dtype)
    y = (torch.rand(60, generator=g) < 0.5).to(dtype)
    out = {}

    def run(name, net, params, obs, loss, **kw):
        result = fit(net, params, obs, loss, steps=4, record="all", **kw)
        flat = torch.cat([p.reshape(-1) for p in result.params.values()])
        out[name] = (flat, result.history)

    rows = Rows(X, y, dtype=dtype)
    for depth in (2, 3):
        net = StackedMLP(5, width=8, depth=depth)
        run(
            f"rows{depth}",
            net,
            net.init(1, g, dtype=dtype),
            rows,
            BCE(),
            lr=0.1,
            penalties=[L2Penalty(0.5)],
        )
        params = net.init(3, g, dtype=dtype)
        own = Rows(
            torch.randn(3, 60, 5, generator=g, dtype=dtype),
            y.expand(3, 60).clone(),
            dtype=dtype,
        )
        run(
            f"members{depth}",
            net,
            params,
            rows,
            MSE(),
            lr=0.01,
            penalties=[L2Penalty(1.0, params)],
        )
        run(
            f"own-rows{depth}",
            net,
            params,
            own,
            BCE(),
            lr=0.1,
            penalties=[L2Penalty(0.5)],
        )
        run(
            f"separate{depth}", net, params, rows, MSE(), lr=0.01, separate_members=True
        )
        linear = NeuralLinear(5, width=8, depth=depth)
        start = linear.init(1, g, dtype=dtype)
        pairs = Pairs(
            X,
            torch.arange(30),
            torch.arange(30, 60),
            y[:30],
            torch.rand(30, generator=g, dtype=dtype) + 0.5,
            dtype=dtype,
        )
        run(
            f"pairs{depth}",
            linear,
            start,
            pairs,
            BradleyTerry(),
            optimizer="adam",
            lr=0.01,
            penalties=[L2Penalty(1.0, start)],
        )
    return out


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fits_do_not_depend_on_what_the_memory_held(dtype) -> None:
    """Every pass writes its buffers before reading them: NaN left in the block by
    an earlier fit changes nothing, and the fits equal those of a fresh thread (whose
    first fit allocates afresh) bitwise."""
    fresh = _in_thread(lambda: _fits(dtype))
    _fits(dtype)  # the block now exists and is large enough
    block = _block(torch.zeros(1, dtype=dtype))
    assert block is not None
    block.fill_(float("nan"))
    reused = _fits(dtype)
    assert _block(torch.zeros(1, dtype=dtype)) is block  # reused, not regrown
    assert fresh.keys() == reused.keys()
    for name, (theta, history) in fresh.items():
        assert torch.equal(theta, reused[name][0]), name
        assert torch.equal(history, reused[name][1]), name


def test_threads_keep_their_own_blocks() -> None:
    serial = _fits(torch.float64)
    results = []
    workers = [
        threading.Thread(target=lambda: results.append(_fits(torch.float64)))
        for _ in range(2)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(results) == 2  # neither thread failed
    for result in results:
        for name, (theta, history) in serial.items():
            assert torch.equal(theta, result[name][0]), name
            assert torch.equal(history, result[name][1]), name
