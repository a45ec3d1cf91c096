"""A full Gram A = lam I + sum_i w_i z_i z_i^T kept on the model's device (PyTorch).

A neural policy whose model lives on an accelerator keeps its uncertainty there too:
the features z = g(x) or phi(x) of the K arms never leave the device, the widths
||z_k||_{A^-1} (or the duel widths ||z_k - z_k'||_{A^-1}) are computed next to them, and
a round sends to the host one small array (the means and the widths of the K arms, read
together) from which the rule picks the action with the policy's own NumPy stream.

``DeviceGram`` has the arithmetic of ``linalg.Gram`` (a Sherman-Morrison update of A^-1
and the determinant lemma for log det A in O(p^2) per rank-1 term [Sherman1950]; a
Cholesky refactorisation every ``refactor_every`` terms and after a batch), in float64
whatever the network's dtype (the rank-1 updates and log-determinants need it; the
features are cast on the device). It answers ``linalg.GramLike``: the ``*_unchecked`` and
host methods return NumPy arrays, the ``*_tensor`` methods device tensors.

``gram_for(model, p, lam)`` is the one switch: a ``DeviceGram`` when the model is on a
device other than the CPU, else ``linalg.Gram`` (the NumPy default path, bit for bit the
runs stored before devices existed).

References:
    [Sherman1950] J. Sherman, W. J. Morrison. Adjustment of an inverse matrix
        corresponding to a change in one element of a given matrix. Annals of
        Mathematical Statistics 21(1), 1950.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from banditkit.core.lazy import torch  # imported at first use
from banditkit.core.validation import check_int, check_scalar
from banditkit.linalg import Gram
from banditkit.linalg._base import FullGramBase, GramBase
from banditkit.linalg._common import check_state, check_weight

__all__ = ["DeviceGram", "gram_for", "on_accelerator", "to_host"]


def on_accelerator(device: Any) -> bool:
    """Whether a model on ``device`` keeps its Gram there (any device but the CPU)."""
    return getattr(device, "type", "cpu") != "cpu"


def to_host(mean: torch.Tensor, widths: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The means (K,) and the widths (K,) or (K, K) of a round, read in one transfer.

    Example:
        >>> mean, widths = to_host(torch.zeros(2), torch.ones(2, 2))
        >>> mean.shape, widths.shape
        ((2,), (2, 2))
    """
    K = mean.shape[0]
    both = torch.cat([mean.reshape(-1), widths.reshape(-1)]).to(torch.float64)
    host = both.cpu().numpy()
    return host[:K], host[K:].reshape(widths.shape)


def gram_for(model: Any, p: int, lam: float) -> Gram | DeviceGram:
    """The Gram of a model's features: on its device, or ``linalg.Gram`` on the CPU.

    Example:
        >>> class OnCpu:
        ...     device = torch.device("cpu")
        >>> type(gram_for(OnCpu(), 3, 1.0)).__name__
        'Gram'
    """
    device = getattr(model, "device", None)
    if on_accelerator(device):
        return DeviceGram(p, lam, device=device)
    return Gram(p, lam)


class DeviceGram(GramBase):
    """A = lam I + sum_i w_i z_i z_i^T with A^-1 and log det A on a device (module docstring).

    Args:
        d: Dimension p of the features, >= 1.
        lam: Ridge, > 0.
        device: Where A lives (a ``torch.device`` or its name).
        refactor_every: Rank-1 terms between Cholesky refactorisations, >= 1.

    Example:
        >>> gram = DeviceGram(2, 1.0, device="cpu")
        >>> gram.update(np.array([1.0, 0.0]), 3.0)
        >>> gram.norms(np.eye(2)).tolist()
        [0.5, 1.0]
        >>> round(gram.logdet, 6)  # log 4
        1.386294
    """

    _KIND = "DeviceGram"
    #: ``linalg.Gram``'s state without the Cholesky factor (refactorised when needed).
    _STATE_KEYS = tuple(k for k in FullGramBase._STATE_KEYS if k != "cholesky")

    def __init__(
        self, d: int, lam: float, *, device: Any, refactor_every: int = 512
    ) -> None:
        self._d = check_int("d", d, low=1)
        self._lam = check_scalar("lam", lam, low=0.0, low_open=True)
        self._refactor_every = check_int("refactor_every", refactor_every, low=1)
        self.device = torch.device(device)
        eye = torch.eye(self._d, dtype=torch.float64, device=self.device)
        self._matrix = self._lam * eye
        self._inverse = eye / self._lam
        #: log det A as a 0-d device tensor (read on the host only when asked).
        self._logdet = torch.tensor(
            self._d * math.log(self._lam), dtype=torch.float64, device=self.device
        )
        self._n_updates = 0
        self._since_refactor = 0

    # ------------------------------------------------------------------ reads
    @property
    def is_diagonal(self) -> bool:
        """False: A is kept in full."""
        return False

    @property
    def diagonal(self) -> np.ndarray:
        """diag(A) (d,) on the host."""
        return self._matrix.diagonal().cpu().numpy().copy()

    @property
    def matrix(self) -> np.ndarray:
        """A (d, d) on the host (a copy)."""
        return self._matrix.cpu().numpy().copy()

    @property
    def inverse(self) -> np.ndarray:
        """A^-1 (d, d) on the host (a copy)."""
        return self._inverse.cpu().numpy().copy()

    @property
    def logdet(self) -> float:
        """The log-determinant log det A (read from the device)."""
        return float(self._logdet)

    def _tensor(self, X: Any) -> torch.Tensor:
        """X as a float64 tensor on the device (features from a model, or an array)."""
        return torch.as_tensor(X, device=self.device).to(torch.float64)

    def norms_tensor(self, Z: Any) -> torch.Tensor:
        """||z_k||_{A^-1} (K,) of the rows of Z (K, d), a device tensor."""
        Z = self._tensor(Z)
        q = ((Z @ self._inverse) * Z).sum(dim=-1)
        return q.clamp(min=0.0).sqrt()

    def pair_norms_tensor(self, Z: Any) -> torch.Tensor:
        """||z_i - z_j||_{A^-1} (K, K) of the rows of Z (K, d), a device tensor.

        From G = Z A^-1 Z^T (symmetrised) and q = diag(G): q_i + q_j - 2 G_ij, clipped
        at 0; equal rows are exactly 0 apart (as ``linalg.Gram.pair_norms``).
        """
        Z = self._tensor(Z)
        G = (Z @ self._inverse) @ Z.T
        G = 0.5 * (G + G.T)
        q = G.diagonal()
        sq = (q[:, None] + q[None, :] - 2.0 * G).clamp(min=0.0)
        equal = (Z[:, None, :] == Z[None, :, :]).all(dim=-1)
        return sq.masked_fill(equal, 0.0).sqrt()

    def norms_unchecked(self, X: Any) -> np.ndarray:
        """||x_k||_{A^-1} (K,) on the host (features from a model, or checked rows)."""
        return self.norms_tensor(X).cpu().numpy()

    def pair_norms_unchecked(self, Z: Any) -> np.ndarray:
        """||z_i - z_j||_{A^-1} (K, K) on the host (features from a model, or checked)."""
        return self.pair_norms_tensor(Z).cpu().numpy()

    def solve(self, b: Any) -> np.ndarray:
        """A^-1 b on the host."""
        return (self._inverse @ self._tensor(b)).cpu().numpy()

    # ------------------------------------------------------------------ updates
    def update(self, x: Any, weight: float = 1.0) -> None:
        """A += w x x^T for x (d,) an array or a device tensor (features stay there)."""
        x = self._tensor(x).reshape(-1)
        if x.shape[0] != self._d:
            raise ValueError(f"x must have shape ({self._d},); got {tuple(x.shape)}.")
        self.update_unchecked(x, check_weight(weight))

    def update_unchecked(self, x: Any, w: float) -> None:
        """A += w x x^T in O(d^2): A^-1 by Sherman-Morrison, log det by the lemma."""
        x = self._tensor(x)
        u = self._inverse @ x
        wq = (w * x.dot(u)).clamp(min=0.0)
        self._matrix = self._matrix + w * torch.outer(x, x)
        self._inverse = self._inverse - (w / (1.0 + wq)) * torch.outer(u, u)
        self._logdet = self._logdet + torch.log1p(wq)
        self._n_updates += 1
        self._since_refactor += 1
        if self._since_refactor >= self._refactor_every:
            self._refactor()

    def update_batch(self, X: Any, weights: Any = None) -> None:
        """A += X^T diag(w) X for the rows of X (n, d), then a refactorisation."""
        X = self._tensor(X)
        if X.ndim != 2 or X.shape[1] != self._d:
            raise ValueError(f"X must have shape (n, {self._d}); got {tuple(X.shape)}.")
        if X.shape[0] == 0:
            return
        w = torch.ones(X.shape[0], dtype=X.dtype, device=self.device)
        if weights is not None:
            w = self._tensor(weights).reshape(-1)
        self._matrix = self._matrix + (X.T * w) @ X
        self._n_updates += X.shape[0]
        self._refactor()

    def update_rows(self, X: np.ndarray, w: np.ndarray) -> None:
        """:meth:`update_batch` for checked host rows X (n, d) and weights w (n,)."""
        self.update_batch(X, w)

    def _unwhiten(self, z: np.ndarray) -> np.ndarray:
        """Rows z ~ N(0, I) mapped to draws from N(0, A^-1): z M^T with A^-1 = M M^T."""
        factor = torch.linalg.cholesky(self._inverse).to(
            device="cpu", dtype=torch.float64
        )
        return np.asarray(z) @ factor.numpy().T

    def set_ridge(self, lam: float) -> None:
        """Replace lam I by lam' I and refactorise."""
        lam = check_scalar("lam", lam, low=0.0, low_open=True)
        eye = torch.eye(self._d, dtype=torch.float64, device=self.device)
        self._matrix = self._matrix + (lam - self._lam) * eye
        self._lam = lam
        self._refactor()

    def _refactor(self) -> None:
        """A^-1 and log det A from the Cholesky factor of A, in O(d^3) on the device."""
        matrix = 0.5 * (self._matrix + self._matrix.T)
        chol = torch.linalg.cholesky(matrix)
        inverse = torch.cholesky_inverse(chol)
        self._matrix = matrix
        self._inverse = 0.5 * (inverse + inverse.T)
        self._logdet = 2.0 * chol.diagonal().log().sum()
        self._since_refactor = 0

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Host arrays and scalars: kind, d, lam, counters, logdet, matrix, inverse."""
        arrays = {"kind": self._KIND, "logdet": self.logdet}
        arrays.update(matrix=self.matrix, inverse=self.inverse)
        return {
            k: arrays[k] if k in arrays else getattr(self, f"_{k}")
            for k in self._STATE_KEYS
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`.

        Raises:
            ValueError: For missing keys, another kind or d, or a matrix of the wrong shape.
        """
        check_state(state, self._KIND, self._STATE_KEYS, self._d)
        matrix = np.asarray(state["matrix"], dtype=np.float64)
        inverse = np.asarray(state["inverse"], dtype=np.float64)
        if matrix.shape != (self._d, self._d) or inverse.shape != matrix.shape:
            raise ValueError(
                f"state matrices must be ({self._d}, {self._d}); got {matrix.shape}."
            )
        self._lam = check_scalar("lam", state["lam"], low=0.0, low_open=True)
        self._n_updates = int(state["n_updates"])
        self._since_refactor = int(state["since_refactor"])
        self._matrix = self._tensor(matrix)
        self._inverse = self._tensor(inverse)
        self._logdet = torch.tensor(
            float(state["logdet"]), dtype=torch.float64, device=self.device
        )
