"""dtype and device names of the toolkit, and the growing device buffer (nn.device)."""

import numpy as np
import pytest
import torch

from banditkit.nn import GrowingBuffer, resolve_device, resolve_dtype


def test_dtypes_by_name() -> None:
    assert resolve_dtype("float64") is torch.float64
    assert resolve_dtype("float32") is torch.float32
    assert resolve_dtype(torch.float32) is torch.float32
    for bad in ("float16", "double", torch.int64, None):
        with pytest.raises(ValueError, match="dtype must be one of"):
            resolve_dtype(bad)  # type: ignore[arg-type]


def test_devices_by_name() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == torch.device(expected)
    for bad in ("gpu", "cuda:x", "mps", 3):
        with pytest.raises(ValueError, match="device must be 'cpu', 'cuda', 'cuda:N'"):
            resolve_device(bad)  # type: ignore[arg-type]


def test_a_missing_device_is_named() -> None:
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    missing = [f"cuda:{count}", "cuda:17"] + ([] if count else ["cuda"])
    for name in missing:
        with pytest.raises(ValueError, match=f"device '{name}' is not available"):
            resolve_device(name)


def test_buffer_grows_geometrically_and_keeps_the_rows() -> None:
    buf = GrowingBuffer((3,), torch.float32, torch.device("cpu"), capacity=2)
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(9, 3))
    capacities = []
    for i in range(9):
        buf.extend(rows[i : i + 1])
        capacities.append(buf.capacity)
    assert capacities == [2, 2, 4, 4, 8, 8, 8, 8, 16]
    assert buf.view().dtype == torch.float32 and buf.n == 9
    torch.testing.assert_close(buf.view(), torch.from_numpy(rows).float())
    frozen = rows[:2].copy()
    frozen.flags.writeable = False  # a read-only block (a context's arms) is taken
    buf.extend(frozen)
    assert buf.n == 11
    buf.truncate(4)
    assert buf.n == 4 and buf.capacity == 16
    buf.extend(torch.zeros(1, 3, dtype=torch.float64))
    assert buf.view()[-1].abs().sum() == 0.0
    scalars = GrowingBuffer((), torch.float64, torch.device("cpu"))
    scalars.extend(np.arange(5.0))
    assert scalars.view().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
