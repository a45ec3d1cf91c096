"""The per-round passes of a small depth-2 network over a few arms, in NumPy.

A private kernel of ``nn.ArmPass`` (``banditkit.nn.grads``), which chooses it for a
depth-2 ``nn.MLP`` without biases on the CPU (``supports``). A bandit round scores K arms
(K = 5 on the synthetic tasks of [Bae2025, Sec. 7]) and then needs the gradient of the arm
it played. With z = W_1 x, h = a(z), s = sqrt(m) or 1 and c = s W_2[0] * a'(z) (the
closed form of ``nn.grads``, depth 2, no biases), per arm k:

    f_k    = s h_k . W_2[0]
    q_k    = sum_j g_kj^2 u_j = sum_i c_ki^2 [(x_k^2)^T U_1]_i + s^2 sum_i h_ki^2 u_2,i
    g(x_k) = [vec(c_k x_k^T); s h_k]                            (order of ``flat_params``)

with u = (U_1 (m, d) row-major, u_2 (m,)) the weights of a diagonal Gram (u = 1 / diag A
gives q_k = ||g_k||^2_{A^-1}). On (K, m) blocks these are about a dozen products of a
few hundred numbers each, where PyTorch's per-operation dispatch costs more than the
arithmetic; NumPy does the same arithmetic with far less overhead (docs/performance.md),
and the played arm's gradient comes from the hidden layer kept from the scoring pass
instead of a second forward.

Same formulas as the torch closed form of ``nn.grads`` (which serves biases, other
depths and other devices) up to the order of floating-point operations: NumPy's BLAS
rounds differently from PyTorch's, so f, q and g agree with it to rounding
(tests/nn/test_arms.py: 1e-12 relative), not bit for bit. The exact f(x; theta_0) = 0 of
the mirrored initialisation is kept: as in ``MLP.forward``, the two halves of the hidden
layer come from two products of identical shapes and the output sums their two terms,
which cancel exactly.

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from banditkit.nn.mlp import MLP

__all__ = ["NumpyArms", "supports"]


def supports(model: Any) -> bool:
    """Whether ``NumpyArms`` computes this network's passes: depth 2, no biases, CPU."""
    return (
        isinstance(model, MLP)
        and model.depth == 2
        and not model.bias
        and model.init in ("mirrored", "standard")
        and model.theta0.device.type == "cpu"
    )


class NumpyArms:
    """f, the diagonal-Gram squared widths and the gradients of a depth-2 MLP on K arms.

    Bound to one ``nn.MLP`` (``supports(model)``); it reads the live parameters through
    NumPy views, so training in place needs no notice. ``sq_norms`` and ``grads`` keep
    their rows and hidden layer until the parameters change, and ``grad`` returns the
    gradient of one of those rows from them (module docstring). Rows X are NumPy arrays
    (K, d) of the model's dtype (not checked: the caller's validated arms).

    Args:
        model: The network.
    """

    #: Nothing here is written in place (each pass and each change of theta binds new
    #: arrays): an update is undone by rebinding the attributes (``core.transaction``),
    #: without copying the views of the parameters, which are the network's to put back.
    _undo_parts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, model: MLP) -> None:
        assert supports(model)
        self.model = model
        self._w1, self._w2 = model.layer(0)[0], model.layer(1)[0]
        self._relu = model.activation == "relu"
        self._half = model.width // 2 if model.init == "mirrored" else 0
        self._s = model.out_scale
        self._views: tuple[Any, ...] = ()
        # (rows, hidden layer, parameter key) of the last ``sq_norms`` or ``grads``
        self._kept: tuple[np.ndarray, np.ndarray, tuple[int, ...]] | None = None

    def _params(self) -> tuple[Any, ...]:
        """NumPy views of W_1 and W_2[0] and the products of theta the pass reads.

        The views are renewed if the parameters' storage moved; sw = s W_2[0] and
        sw^2 are recomputed when a parameter changed (its version counter moved).
        """
        w1, w2 = self._w1, self._w2
        key = (w1.data_ptr(), w2.data_ptr(), w1._version, w2._version)
        views = self._views
        if views and views[0] == key:
            return views
        W1, W2 = w1.detach().numpy(), w2.detach().numpy()[0]
        half = self._half
        sw = self._s * W2
        # (key, W_1 blocks (transposed views), sw blocks, sw, sw^2)
        blocks = (W1[:half].T, W1[half:].T) if half else (W1.T,)
        # the output weights s W_2[0] in the halves' blocks: f = h_top sw_top + ...
        heads = (sw[:half], sw[half:]) if half else (sw,)
        self._views = (key, blocks, heads, sw, sw * sw)
        return self._views

    def forward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return f (K,) and the hidden layer h (K, m) for rows X (K, d) of the model's dtype."""
        _, blocks, heads, _, _ = self._params()
        h = np.empty((X.shape[0], self.model.width), dtype=X.dtype)
        if self._half:  # the two halves by products of identical shapes (docstring)
            top, bottom = h[:, : self._half], h[:, self._half :]
            np.matmul(X, blocks[0], out=top)
            np.matmul(X, blocks[1], out=bottom)
        else:
            np.matmul(X, blocks[0], out=h)
        if self._relu:
            np.maximum(h, 0.0, out=h)
        else:
            _sigmoid(h)
        f = top @ heads[0] + bottom @ heads[1] if self._half else h @ heads[0]
        return f, h

    def sq_norms(self, X: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return f (K,) and q_k = sum_j g_kj^2 u_j (K,), without the (K, p) block.

        Args:
            X: Rows (K, d) in the model's dtype (not checked: the caller's validated arms).
            u: Weights (p,) in the order of ``flat_params``, the model's dtype.

        Returns:
            f and q; the rows and the hidden layer are kept for ``grad``.
        """
        f, h = self.forward(X)
        views = self._views
        m, d = self.model.width, self.model.d
        md = m * d
        if self._relu:  # c^2 = 1[z > 0] (s W_2[0])^2
            c2 = np.sign(h)
            c2 *= views[4]
        else:
            c2 = h * (1.0 - h)
            c2 *= views[3]
            c2 *= c2
        q = np.vecdot(c2, (X * X) @ u[:md].reshape(m, d).T)
        q += np.vecdot(h * h, (self._s * self._s) * u[md:])
        self._kept = (X, h, views[0])
        return f, q

    def grads(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return f (K,) and G (K, p), row k = g(x_k; theta); the pass is kept for ``grad``."""
        f, h = self.forward(X)
        m, d = self.model.width, self.model.d
        K = X.shape[0]
        G = np.empty((K, m * d + m), dtype=h.dtype)
        c = self._slopes(h)
        np.multiply(c[:, :, None], X[:, None, :], out=G[:, : m * d].reshape(K, m, d))
        np.multiply(h, self._s, out=G[:, m * d :])
        self._kept = (X, h, self._views[0])
        return f, G

    def grad(self, k: int) -> np.ndarray | None:
        """g(x_k; theta) (p,) of row k of the last pass; None if theta changed since."""
        kept = self._kept
        if kept is None or kept[2] != self._params()[0]:
            return None
        X, h, _ = kept
        m, d = self.model.width, self.model.d
        c = self._slopes(h[k])
        g = np.empty(m * d + m, dtype=h.dtype)
        np.multiply(c[:, None], X[k], out=g[: m * d].reshape(m, d))
        np.multiply(h[k], self._s, out=g[m * d :])
        return g

    def _slopes(self, h: np.ndarray) -> np.ndarray:
        """C = a'(z) * s W_2[0] from h = a(z) (rows of h)."""
        c = np.sign(h) if self._relu else h * (1.0 - h)
        c *= self._views[3]
        return c


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)), in place."""
    np.negative(z, out=z)
    np.exp(z, out=z)
    z += 1.0
    np.reciprocal(z, out=z)
    return z
