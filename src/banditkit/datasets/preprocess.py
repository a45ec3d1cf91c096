"""Feature preprocessing shared by the dataset loaders.

Scalings (``scale_features``), covering the papers' preprocessing and common alternatives:

    minmax         per feature: 2 (x_j - min_j) / (max_j - min_j) - 1, constant columns -> 0
                   [Bae2025, App. A; our default for tabular data]
    minmax-global  one min and max for the whole array (images: x / 127.5 - 1 on 0..255)
    minmax-row     per sample: 2 (x - min(x)) / (max(x) - min(x)) - 1 (the paper's literal formula)
    l2             each row divided by its L2 norm [Zhou2020, Sec. 7.2]
    zscore         per feature: (x_j - mean_j) / std_j, constant columns -> 0
    zscore-l2      zscore, then l2 (an option for Covertype's raw scales: [Sun2025, App. F.2]
                   and [Oh2025, App. E.1.2] do not state a scaling)
    none           unchanged

Categorical columns (``encode_categorical``):

    random   each (column, symbol) pair gets a seeded value from Unif(-1, 1) [Bae2025, App. A]
    onehot   one indicator per symbol seen (sorted); a missing value gives an all-zero block
    ordinal  the symbol's index in sorted order; a missing value gives -1 (one column per
             attribute, as the d = 22 and 14 of mushroom and adult in [Sun2025, App. F.2])

References:
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based exploration.
    [Sun2025] J. Sun, W. Wang, P. Xu. Provable anytime ensemble sampling algorithms in
        nonlinear contextual bandits. arXiv:2510.10730.
    [Oh2025] Y. Oh, J. Park, T. Paik. Neural variance-aware dueling bandits with deep
        representation and shallow exploration. arXiv:2506.01250.
"""

from __future__ import annotations

import numpy as np

from banditkit.core.validation import check_choice, check_int

__all__ = [
    "CATEGORICAL",
    "SCALINGS",
    "downsample_images",
    "encode_categorical",
    "scale_features",
]

SCALINGS = (
    "minmax",
    "minmax-global",
    "minmax-row",
    "l2",
    "zscore",
    "zscore-l2",
    "none",
)
CATEGORICAL = ("random", "onehot", "ordinal")


def _safe_minmax(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    span = np.asarray(hi - lo, dtype=np.float64)
    constant = np.broadcast_to(span <= 0, x.shape)
    out = x - lo  # the only full-size temporary: large image sets stay affordable
    np.divide(out, np.where(span > 0, span, 1.0), out=out)
    np.clip(out, 0.0, 1.0, out=out)  # guards rounding at the ends
    out *= 2.0
    out -= 1.0
    np.copyto(out, 0.0, where=constant)
    return out


def _l2(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def _zscore(x: np.ndarray) -> np.ndarray:
    mean, std = x.mean(axis=0), x.std(axis=0)
    return np.where(std > 0, (x - mean) / np.where(std > 0, std, 1.0), 0.0)


def scale_features(x: np.ndarray, scale: str) -> np.ndarray:
    """Scale a feature matrix (n, d); see the module docstring for the choices.

    Args:
        x: Features, one row per sample.
        scale: One of ``SCALINGS``.

    Returns:
        A new float64 array of the same shape.

    Example:
        >>> scale_features(np.array([[0.0, 5.0], [2.0, 5.0]]), "minmax").tolist()
        [[-1.0, 0.0], [1.0, 0.0]]
        >>> scale_features(np.array([[3.0, 4.0]]), "l2").tolist()
        [[0.6, 0.8]]
    """
    check_choice("scale", scale, SCALINGS)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be a 2-d array; got shape {x.shape}.")
    if x.shape[0] == 0:
        return x.copy()
    if scale == "minmax":
        return _safe_minmax(x, x.min(axis=0), x.max(axis=0))
    if scale == "minmax-global":
        return _safe_minmax(x, np.asarray(x.min()), np.asarray(x.max()))
    if scale == "minmax-row":
        return _safe_minmax(
            x, x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)
        )
    if scale == "l2":
        return _l2(x)
    if scale == "zscore":
        return _zscore(x)
    if scale == "zscore-l2":
        return _l2(_zscore(x))
    return x.copy()


def encode_categorical(
    symbols: np.ndarray,
    encoding: str,
    *,
    missing: str | None = "?",
    seed: int = 0,
    missing_as_symbol: bool = False,
) -> tuple[np.ndarray, list[str]]:
    """Encode a table of categorical symbols (n, c) as numbers.

    Args:
        symbols: String array, one column per categorical attribute.
        encoding: "random", "onehot" or "ordinal" (see the module docstring).
        missing: The symbol marking a missing value (None: no missing values).
        seed: Seed of the random values ("random" only); the same seed gives the same map.
        missing_as_symbol: Treat ``missing`` as an ordinary symbol (mushroom's "?" for
            stalk-root: [Bae2025, App. A] gives every character a value) instead of a
            missing value.

    Returns:
        The encoded matrix (n, c) for "random"/"ordinal" or (n, total symbols) for "onehot",
        and one name per output column ("col3=x").

    Example:
        >>> x, names = encode_categorical(np.array([["a"], ["b"], ["?"]]), "onehot")
        >>> x.tolist(), names
        ([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], ['c0=a', 'c0=b'])
        >>> encode_categorical(np.array([["b"], ["a"], ["?"]]), "ordinal")[0].ravel().tolist()
        [1.0, 0.0, -1.0]
    """
    check_choice("categorical", encoding, CATEGORICAL)
    symbols = np.asarray(symbols).astype(str)
    if symbols.ndim != 2:
        raise ValueError(f"symbols must be a 2-d array; got shape {symbols.shape}.")
    rng = np.random.default_rng(np.random.SeedSequence(check_int("seed", seed, low=0)))
    columns, names = [], []
    for j in range(symbols.shape[1]):
        col = symbols[:, j]
        is_missing = (
            np.zeros(col.shape, dtype=bool)
            if missing is None or missing_as_symbol
            else col == missing
        )
        levels = sorted(set(col[~is_missing].tolist()))
        index = {s: i for i, s in enumerate(levels)}
        codes = np.array([index.get(s, -1) for s in col.tolist()], dtype=np.int64)
        if encoding == "ordinal":
            columns.append(codes[:, None].astype(np.float64))
            names.append(f"c{j}")
        elif encoding == "random":
            # One draw per (column, symbol) in sorted order, so a map depends only on the
            # seed and the symbols present [Bae2025, App. A]; one map per column is our choice.
            values = rng.uniform(-1.0, 1.0, size=len(levels))
            columns.append(
                np.where(codes >= 0, values[np.maximum(codes, 0)], 0.0)[:, None]
            )
            names.append(f"c{j}")
        else:
            block = np.zeros((col.shape[0], len(levels)))
            rows = np.nonzero(codes >= 0)[0]
            block[rows, codes[rows]] = 1.0
            columns.append(block)
            names.extend(f"c{j}={s}" for s in levels)
    if not columns:
        return np.zeros((symbols.shape[0], 0)), []
    return np.hstack(columns), names


def downsample_images(images: np.ndarray, size: int) -> np.ndarray:
    """Average-pool square images (n, s, s) to (n, size, size); ``size`` must divide s.

    MNIST's 28 x 28 becomes 14 x 14 (196 features, the default: [Bae2025, App. A] says both
    "7 x 7" and "196-dimensional", and we follow the 196) or 7 x 7 (49).

    Example:
        >>> downsample_images(np.arange(16.0).reshape(1, 4, 4), 2).tolist()
        [[[2.5, 4.5], [10.5, 12.5]]]
    """
    images = np.asarray(images)
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images must have shape (n, s, s); got {images.shape}.")
    side = images.shape[1]
    size = check_int("image_size", size, low=1, high=side)
    if side % size:
        raise ValueError(f"image_size must divide the image side {side}; got {size}.")
    f = side // size
    pooled = images.reshape(images.shape[0], size, f, size, f).astype(np.float64)
    return pooled.mean(axis=(2, 4))
