import numpy as np
import pytest

from banditkit.core import Context, check_action


def test_context_is_read_only_float64():
    ctx = Context(arms=[[1, 2], [3, 4]])
    assert ctx.arms.dtype == np.float64
    assert (ctx.n_arms, ctx.d) == (2, 2)
    with pytest.raises(ValueError):
        ctx.arms[0, 0] = 5.0


def test_context_validates_revenues_and_capacity():
    with pytest.raises(
        ValueError, match="revenues has 1 entries but there are 2 items"
    ):
        Context(arms=np.eye(2), revenues=[1.0])
    with pytest.raises(ValueError, match="max_size"):
        Context(arms=np.eye(2), max_size=0)


def test_check_action_per_family():
    ctx = Context(arms=np.eye(3), max_size=2)
    assert check_action(np.int64(1), ctx, "contextual") == 1
    with pytest.raises(ValueError, match="out of range for 3 arms"):
        check_action(3, ctx, "contextual")
    with pytest.raises(ValueError, match="out of range"):
        check_action(-1, ctx, "contextual")
    with pytest.raises(TypeError):
        check_action(1.0, ctx, "contextual")
    assert check_action((2, 0), ctx, "dueling") == (2, 0)
    with pytest.raises(ValueError, match="pair"):
        check_action((0, 1, 2), ctx, "dueling")
    assert check_action([2, 0], ctx, "assortment") == (0, 2)
    with pytest.raises(ValueError, match="capacity is 2"):
        check_action((0, 1, 2), ctx, "assortment")
    with pytest.raises(ValueError, match="repeat"):
        check_action((1, 1), ctx, "assortment")


def test_unchecked_context_wraps_without_copy_and_freezes():
    arms = np.arange(6.0).reshape(3, 2)
    ctx = Context.unchecked(arms)
    assert ctx.arms is arms
    assert not arms.flags.writeable
    assert ctx.revenues is None and ctx.max_size is None
    assert (ctx.n_arms, ctx.d) == (3, 2)
