"""The Open Bandit Dataset (OBD) [Saito2020]: the logged events and their features.

:func:`load_obd` reads one log (behaviour policy x campaign) with its ``item_context.csv``;
:func:`obd_features` builds the feature blocks of [Bae2025, App. J.1]:

    user     categorical user columns one-hot encoded, truncated SVD to ``user_dim`` (16)
    item     item_context.csv: numeric columns min-max to [-1, 1], categorical columns one-hot,
             truncated SVD to ``item_dim`` (8)
    position the display position 1..3 min-max scaled to [-1, 1]
    affinity log1p of the user-item affinity, min-max scaled to [-1, 1] over the whole log

SVD and scalers are fitted on the full log, deterministically (``random_state=0``), before
any replay (our choice; [Bae2025, App. J.1] does not say).

Two variants: the 10,000-row sample of each log (shipped in the obp package, checksummed, at
``<data home>/obd/{policy}/{campaign}/``) and the complete dataset, which a user extracts from
``open_bandit_dataset.zip`` into ``<data home>/obd/`` (giving
``<data home>/obd/open_bandit_dataset/{policy}/{campaign}/``; no published checksums, so it is
read unverified and says so in its metadata).

References:
    [Saito2020] Y. Saito, S. Aihara, M. Matsutani, Y. Narita. Open bandit dataset and pipeline:
        towards realistic and reproducible off-policy evaluation. arXiv:2008.07146.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from banditkit.core.lazy import pd  # imported at first use
from banditkit.core.validation import check_choice, check_int
from banditkit.datasets.registry import dataset_info
from banditkit.datasets.storage import DatasetNotFoundError, data_home, require_files

__all__ = [
    "BEHAVIOR_POLICIES",
    "CAMPAIGNS",
    "OBDFeatures",
    "OBDLog",
    "load_obd",
    "obd_features",
]

BEHAVIOR_POLICIES = ("random", "bts")
CAMPAIGNS = ("all", "men", "women")
VARIANTS = ("auto", "sample", "full")
FULL_DIR = "open_bandit_dataset"


@dataclass(frozen=True)
class OBDLog:
    """One OBD log: n logged events over ``n_items`` items.

    Attributes:
        item_id: (n,) the logged (displayed) item of each event, in [0, n_items).
        position: (n,) its display position, 1..3 (left, centre, right).
        click: (n,) 1 if it was clicked, else 0.
        propensity: (n,) the logging policy's probability of that item at that position.
        user_codes: (n, c) integer codes of the c categorical user columns.
        user_levels: Number of distinct values of each user column.
        affinity: (n, n_items) float32 user-item affinity scores.
        item_numeric: (n_items, a) numeric item features.
        item_codes: (n_items, b) integer codes of the categorical item features.
        meta: variant ("sample" or "full"), paths, verified, n_columns (CSV columns, the
            unnamed index included), behaviour policy, campaign.
    """

    item_id: np.ndarray
    position: np.ndarray
    click: np.ndarray
    propensity: np.ndarray
    user_codes: np.ndarray
    user_levels: tuple[int, ...]
    affinity: np.ndarray
    item_numeric: np.ndarray
    item_codes: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_events(self) -> int:
        """Logged events (rows)."""
        return int(self.item_id.shape[0])

    @property
    def n_items(self) -> int:
        """Items (actions) of the campaign."""
        return int(self.affinity.shape[1])


def _paths(
    behavior_policy: str,
    campaign: str,
    variant: str,
    root: str | os.PathLike[str] | None,
    download: bool,
    verify: bool,
) -> tuple[str, Path, Path]:
    info = dataset_info("obd")
    home = data_home(root) / info.directory
    full = home / FULL_DIR / behavior_policy / campaign
    if variant == "full" or (
        variant == "auto" and (full / f"{campaign}.csv").is_file()
    ):
        log, items = full / f"{campaign}.csv", full / "item_context.csv"
        missing = [p for p in (log, items) if not p.is_file()]
        if missing:
            raise DatasetNotFoundError(
                f"dataset 'obd' (complete): {', '.join(map(str, missing))} missing. Download "
                f"open_bandit_dataset.zip from {info.home} and extract it inside {home} "
                f"(giving {home / FULL_DIR}/{behavior_policy}/{campaign}/...)."
            )
        return "full", log, items
    group = f"{behavior_policy}/{campaign}"
    paths = require_files(
        info, info.files_in(group), root=root, download=download, verify=verify
    )
    return (
        "sample",
        paths[f"{group}/{campaign}.csv"],
        paths[f"{group}/item_context.csv"],
    )


def load_obd(
    behavior_policy: str = "random",
    campaign: str = "all",
    *,
    variant: str = "auto",
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
    verify: bool = True,
) -> OBDLog:
    """Load one Open Bandit Dataset log.

    Args:
        behavior_policy: "random" (uniform logging, the one replay needs) or "bts".
        campaign: "all" (80 items), "men" (34) or "women" (46).
        variant: "sample" (the checksummed 10,000-row sample), "full" (the complete dataset,
            provided by the user) or "auto" (full when present, else the sample).
        root: The data home (default: ``$BANDITKIT_DATA`` or the user cache).
        download: Download the sample when it is missing (never the complete dataset).
        verify: Check the sample's checksums.

    Returns:
        An :class:`OBDLog` in the file's (time) order.
    """
    check_choice("behavior_policy", behavior_policy, BEHAVIOR_POLICIES)
    check_choice("campaign", campaign, CAMPAIGNS)
    check_choice("variant", variant, VARIANTS)
    which, log_path, item_path = _paths(
        behavior_policy, campaign, variant, root, download, verify
    )
    frame = pd.read_csv(log_path, index_col=0)
    n_columns = frame.shape[1] + 1
    need = {"item_id", "position", "click"}
    if not need <= set(frame.columns):
        raise ValueError(
            f"{log_path}: missing columns {sorted(need - set(frame.columns))}."
        )
    user_cols = [c for c in frame.columns if c.startswith("user_feature")]
    aff_cols = sorted(
        (c for c in frame.columns if c.startswith("user-item_affinity_")),
        key=lambda c: int(c.rsplit("_", 1)[1]),
    )
    items = pd.read_csv(item_path, index_col=0).sort_values("item_id")
    n_items = items.shape[0]
    if len(aff_cols) != n_items:
        raise ValueError(
            f"{log_path} has {len(aff_cols)} affinity columns but {item_path} lists "
            f"{n_items} items."
        )
    item_id = frame["item_id"].to_numpy(dtype=np.int64)
    if item_id.min() < 0 or item_id.max() >= n_items:
        raise ValueError(f"{log_path}: item_id outside [0, {n_items}).")
    codes, levels = [], []
    for c in user_cols:
        code, uniques = pd.factorize(frame[c].astype(str), sort=True)
        codes.append(code)
        levels.append(len(uniques))
    feat_cols = [c for c in items.columns if c != "item_id"]
    numeric_cols = [c for c in feat_cols if pd.api.types.is_numeric_dtype(items[c])]
    cat_cols = [c for c in feat_cols if c not in numeric_cols]
    item_codes = (
        np.column_stack(
            [pd.factorize(items[c].astype(str), sort=True)[0] for c in cat_cols]
        )
        if cat_cols
        else np.zeros((n_items, 0), dtype=np.int64)
    )
    propensity_col = (
        "propensity_score" if "propensity_score" in frame else "action_prob"
    )
    return OBDLog(
        item_id=item_id,
        position=frame["position"].to_numpy(dtype=np.int64),
        click=frame["click"].to_numpy(dtype=np.int64),
        propensity=frame[propensity_col].to_numpy(dtype=np.float64)
        if propensity_col in frame
        else np.full(item_id.shape, np.nan),
        user_codes=np.column_stack(codes).astype(np.int64)
        if codes
        else np.zeros((item_id.shape[0], 0), dtype=np.int64),
        user_levels=tuple(levels),
        affinity=frame[aff_cols].to_numpy(dtype=np.float32),
        item_numeric=items[numeric_cols].to_numpy(dtype=np.float64),
        item_codes=item_codes.astype(np.int64),
        meta={
            "variant": which,
            "behavior_policy": behavior_policy,
            "campaign": campaign,
            "log_path": str(log_path),
            "item_context_path": str(item_path),
            "verified": bool(verify) if which == "sample" else False,
            "n_columns": n_columns,
            "note": "10,000-row sample shipped with obp"
            if which == "sample"
            else "complete dataset (no published checksums: not verified)",
        },
    )


@dataclass(frozen=True)
class OBDFeatures:
    """The feature blocks of an OBD log [Bae2025, App. J.1].

    Attributes:
        user: (n, user_dim) SVD embedding of each event's one-hot user features.
        item: (n_items, item_dim) SVD embedding of each item's features.
        position: (n,) display position scaled to [-1, 1].
        affinity: (n, n_items) float32 log1p affinity scaled to [-1, 1].
    """

    user: np.ndarray
    item: np.ndarray
    position: np.ndarray
    affinity: np.ndarray


def _onehot_sparse(codes: np.ndarray, levels: tuple[int, ...]) -> Any:
    from scipy import sparse

    n = codes.shape[0]
    offsets = np.concatenate([[0], np.cumsum(levels)[:-1]]).astype(np.int64)
    cols = (codes + offsets).ravel()
    rows = np.repeat(np.arange(n), codes.shape[1])
    data = np.ones(cols.shape[0])
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, int(sum(levels))))


def _svd(matrix: Any, dim: int, name: str) -> np.ndarray:
    from sklearn.decomposition import TruncatedSVD

    n_features = matrix.shape[1]
    dim = check_int(name, dim, low=1)
    if dim >= n_features:
        raise ValueError(
            f"{name} must be smaller than the {n_features} encoded columns it compresses; "
            f"got {dim}."
        )
    svd = TruncatedSVD(n_components=dim, algorithm="arpack", random_state=0)
    out = svd.fit_transform(matrix)
    # Fix each component's sign (largest |loading| positive) so features are reproducible.
    signs = np.sign(
        svd.components_[np.arange(dim), np.abs(svd.components_).argmax(axis=1)]
    )
    return np.asarray(out * np.where(signs == 0, 1.0, signs), dtype=np.float64)


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    if hi <= lo:
        return np.zeros_like(x)
    return (2.0 * (x - lo) / (hi - lo) - 1.0).astype(x.dtype)


def obd_features(log: OBDLog, *, user_dim: int = 16, item_dim: int = 8) -> OBDFeatures:
    """Compute the feature blocks of [Bae2025, App. J.1] for ``log`` (see the module docstring).

    Args:
        log: A loaded log.
        user_dim: SVD dimension of the user features (paper: 16).
        item_dim: SVD dimension of the item features (paper: 8).
    """
    from scipy import sparse

    user = _svd(_onehot_sparse(log.user_codes, log.user_levels), user_dim, "user_dim")
    item_levels = tuple(int(c.max()) + 1 for c in log.item_codes.T)
    numeric = (
        np.column_stack([_minmax(col) for col in log.item_numeric.T])
        if log.item_numeric.shape[1]
        else np.zeros((log.n_items, 0))
    )
    item_matrix = sparse.hstack(
        [sparse.csr_matrix(numeric), _onehot_sparse(log.item_codes, item_levels)]
    ).tocsr()
    item = _svd(item_matrix, item_dim, "item_dim")
    position = _minmax(log.position.astype(np.float64))
    # [Bae2025, App. J.1] says "log-transformed"; we use log1p (affinities are counts >= 0).
    affinity = _minmax(np.log1p(np.maximum(log.affinity, 0.0)).astype(np.float32))
    return OBDFeatures(user=user, item=item, position=position, affinity=affinity)
