"""Classification datasets as contextual bandits [Zhou2020, Sec. 7.2; Bae2025, Sec. 7].

Each round one row x (with true class y) is drawn from the run's pool of rows and shown as K arms,
one per class. With the "block" (disjoint) encoding arm k is

    x^(k) = [0, ..., 0, x, 0, ..., 0]  in R^{d K}   (x in block k),

and with "onehot-id" it is [x, e_k] in R^{d + K}. The reward is 1 if the chosen arm is the true
class, else 0 (deterministic), so the regret of a round is 1 - reward [Bae2025, Sec. 7].

Row sampling (our reading of [Bae2025, App. A]): ``pool`` rows are drawn without replacement from the
dataset once per run (instance stream); each round shows one pool row, drawn uniformly with
replacement (``shuffle=False``, the neural-bandit protocol) or by walking through a fresh random
permutation of the pool on every pass (``shuffle=True``: every row once before any repeats).

References:
    [Zhou2020] D. Zhou, L. Li, Q. Gu. Neural contextual bandits with UCB-based exploration.
    [Bae2025] S. Bae, D. Lee. Neural logistic bandits. arXiv:2505.02069.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import numpy as np

from banditkit.core import (
    ENVIRONMENTS,
    Context,
    ContextualEnvironment,
    Environment,
    Step,
)
from banditkit.core.environment import saved_queue
from banditkit.core.params import Choice, Flag, Free, Int, Maybe, learned, param
from banditkit.core.types import Action
from banditkit.core.validation import check_choice, check_int
from banditkit.datasets import (
    SCALINGS,
    Dataset,
    list_datasets,
    load_dataset,
    table_dataset,
)
from banditkit.datasets.tables import params_repr

__all__ = ["ENCODINGS", "ClassificationEnv", "DatasetEnv", "encode_arms"]

ENCODINGS = ("block", "onehot-id", "shared")
_RANDOM_SEED_BOUND = 2**31 - 1
_TABLE_PARAMS = ("data", "label_column", "features")
#: The options of the built-in datasets (``load_dataset``), None: the dataset's default.
_DATASET_OPTIONS = ("categorical", "image_size", "subset", "split")


def _check_source(
    data: Any, label_column: str | None, features: list[str] | None, dataset: str | None
) -> Any:
    """The user table ``data`` (a path as a str, or a DataFrame) or None; checks the options.

    Exactly one of ``dataset`` and ``data``; ``label_column`` goes with ``data``.
    """
    if data is None:
        if label_column is not None or features is not None:
            raise ValueError(
                "label_column and features go with data=: give the table as data."
            )
        return None
    if dataset is not None:
        raise ValueError(
            f"give either dataset= (a built-in dataset) or data= (your table), not both; "
            f"got dataset={dataset!r}."
        )
    if label_column is None:
        raise ValueError("data= needs label_column=, the name of the class column.")
    return str(data) if isinstance(data, os.PathLike) else data


def encode_arms(x: np.ndarray, n_classes: int, encoding: str = "block") -> np.ndarray:
    """Expand one row x (d,) into the (K, D) arm matrix of the chosen encoding.

    Args:
        x: One feature row, (d,).
        n_classes: K, the number of arms.
        encoding: "block": arm k is x in block k of a d*K vector, zeros elsewhere;
            "onehot-id": arm k is [x, e_k], of dimension d + K; "shared": every arm is x
            itself (a read-only (K, d) broadcast view, for per-arm policies, which keep one
            model per arm: ``make_policy(name, per_arm=True)``).

    Example:
        >>> encode_arms(np.array([1.0, 2.0]), 2).tolist()
        [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0]]
        >>> encode_arms(np.array([1.0, 2.0]), 2, "onehot-id").tolist()
        [[1.0, 2.0, 1.0, 0.0], [1.0, 2.0, 0.0, 1.0]]
    """
    check_choice("encoding", encoding, ENCODINGS)
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[0]
    if encoding == "block":
        arms = np.zeros((n_classes, n_classes, d))
        arms[np.arange(n_classes), np.arange(n_classes)] = x
        return arms.reshape(n_classes, n_classes * d)
    if encoding == "shared":
        return np.broadcast_to(x, (n_classes, d))
    return np.hstack([np.tile(x, (n_classes, 1)), np.eye(n_classes)])


class _DatasetParams(Environment):
    """The parameters of a dataset environment, declared once (see :class:`DatasetEnv`).

    ``DatasetEnv`` reads ``data`` back as the run's dataset; the table given is ``_source``.
    """

    dataset: str | None = param(Maybe(Free()), default=None)
    pool: int | None = param(Maybe(Int(low=1)), default=None)
    encoding: str = param(Choice(ENCODINGS), default="block")
    scale: str = param(Choice(*SCALINGS, "auto"), default="auto")
    shuffle: bool = param(Flag(), default=False)
    categorical: str | None = param(Free(), default=None)
    image_size: int | None = param(Free(), default=None)
    subset: str | None = param(Free(), default=None)
    split: str | None = param(Free(), default=None)
    data_seed: int | None = param(Maybe(Int(low=0)), default=None)
    data: Any = param(Free(), default=None)
    label_column: str | None = param(Free(), default=None)
    features: list[str] | None = param(Free(), default=None)


class DatasetEnv(_DatasetParams):
    """Shared machinery of the environments built on a labelled dataset.

    Loads the dataset (through the in-process cache of ``banditkit.datasets``), draws the
    run's pool and serves one row per round; subclasses turn the row into arms and outcomes.

    Args:
        dataset: A name from ``banditkit.datasets.list_datasets("classification")``, or
            None with ``data`` (None without ``data``: "digits").
        pool: Rows drawn without replacement per run to form the pool (None: all rows).
        encoding: "block" or "onehot-id" (see :func:`encode_arms`).
        scale: Feature scaling, one of ``banditkit.datasets.SCALINGS`` or "auto".
        shuffle: False draws each round's row uniformly with replacement from the pool; True
            walks through random permutations of the pool.
        categorical, image_size, subset, split: Dataset options, passed to
            ``load_dataset`` (None: the dataset's default; an option the dataset does not have
            raises ValueError).
        data_seed: Seed of random preprocessing (mushroom's random category values). None
            draws it from the run's instance stream, so each run (seed) gets its own map
            (our choice; [Bae2025, App. A] draws the values at random without saying when).
        data, label_column, features: The user's table instead of ``dataset`` (see
            ``banditkit.datasets.table_dataset``).
    """

    path_params: ClassVar[tuple[str, ...]] = ("data",)
    """Parameters a config gives as a path relative to itself (see ``experiments.config.resolve``)."""
    _source: Any = learned(default=None)  # the ``data`` given: a user's table, or None

    def _resolve(self) -> None:
        self._source = _check_source(
            self._source, self.label_column, self.features, self.dataset
        )
        self.features = None if self.features is None else list(self.features)
        self._table: Dataset | None = None
        if self._source is not None:
            for option in _DATASET_OPTIONS:
                if getattr(self, option) is not None:
                    raise ValueError(
                        f"{option} is an option of the built-in datasets; with data= "
                        "prepare the table yourself."
                    )
        else:
            self.dataset = check_choice(
                "dataset", self.dataset or "digits", list_datasets("classification")
            )
        self._data = self._load(0 if self.data_seed is None else self.data_seed)
        n = self._data.features.shape[0]
        if self.pool is not None:
            check_int("pool", self.pool, low=1, high=n)
        self.n_arms = self._data.n_classes
        self._rows = np.arange(n)
        self._queue = np.empty(0, dtype=np.int64)
        self._row = -1
        self._label = -1
        self._serve_shared = False

    def _load(self, seed: int) -> Dataset:
        if self._source is not None:
            if self._table is None:
                self._table = table_dataset(
                    self._source,
                    label_column=str(self.label_column),
                    features=self.features,
                    scale=self.scale,
                )
            return self._table
        assert self.dataset is not None
        options = {name: getattr(self, name) for name in _DATASET_OPTIONS}
        return load_dataset(self.dataset, scale=self.scale, seed=seed, **options)

    @property  # type: ignore[misc]  # read back as the dataset; set as the table
    def data(self) -> Dataset:
        """The dataset of the current run (the ``data=`` argument is in ``get_params()``)."""
        return self._data

    @data.setter
    def data(self, table: Any) -> None:
        self._source = table  # the declared parameter (the constructor sets it)

    def __repr__(self) -> str:
        return params_repr(type(self).__name__, self.get_params())

    @property
    def source_name(self) -> str:
        """The built-in dataset's name, or the user table's file stem ("dataframe")."""
        return self.dataset if self.dataset is not None else self._data.name

    def get_params(self) -> dict[str, Any]:
        """The parameters; ``data``, ``label_column``, ``features`` only with a table."""
        params = {
            n: self._source if n == "data" else getattr(self, n)
            for n in self.param_names()
        }
        if self._source is None:
            for name in _TABLE_PARAMS:
                params.pop(name, None)
        return params

    @property
    def _random_preprocessing(self) -> bool:
        return self._data.meta.get("categorical") == "random"

    def serve_shared(self) -> bool:
        """Hand the rounds of this run to a per-arm policy as shared contexts.

        Per-arm policies (``make_policy(name, per_arm=True)``) call this from ``attach``,
        which ``simulate`` calls after ``reset``: a block-encoded environment then serves
        ``Context.from_shared(x, n_arms=K)`` instead of the (K, K d) block arms, until the
        next ``reset``. The rows, labels, rewards and regrets are those of the block-encoded
        run (the encoding draws nothing); a per-arm model on x is the block-encoded
        shared-parameter model without the zero blocks. Other encodings are left as they are
        (a per-arm model on [x, e_k] is another model).

        Returns:
            True if the rounds are now shared contexts.
        """
        self._serve_shared = self.encoding in ("block", "shared")
        return self._serve_shared

    def _reset(self) -> None:
        self._serve_shared = False
        if self.data_seed is None and self._random_preprocessing:
            self._data = self._load(int(self.instance_rng.integers(_RANDOM_SEED_BOUND)))
        n = self._data.features.shape[0]
        size = n if self.pool is None else self.pool
        self._rows = self.instance_rng.choice(n, size=size, replace=False)
        self._queue = np.empty(0, dtype=np.int64)

    def _draw_row(self) -> int:
        if not self.shuffle:
            return int(self._rows[self.context_rng.integers(self._rows.shape[0])])
        if self._queue.size == 0:
            self._queue = self.context_rng.permutation(self._rows)
        row, self._queue = int(self._queue[0]), self._queue[1:]
        return row

    def _state(self) -> dict[str, Any]:
        return {"queue": self._queue}

    def _load_state(self, state: dict[str, Any]) -> None:
        self._queue = saved_queue(state, self._data.features.shape[0])

    def _next_row_arms(self) -> np.ndarray:
        self._row = self._draw_row()
        self._label = int(self._data.labels[self._row])
        return encode_arms(self._data.features[self._row], self.n_arms, self.encoding)

    def _next_shared_context(self) -> Context:
        """The next round as ``Context.from_shared`` (see :meth:`serve_shared`)."""
        self._row = self._draw_row()
        self._label = int(self._data.labels[self._row])
        return Context.from_shared(self._data.features[self._row], n_arms=self.n_arms)

    @property
    def label_of_round(self) -> int:
        """The true class of the current round's row."""
        return self._label

    def meta(self) -> dict[str, Any]:
        """The dataset's metadata (source, options, subset notes)."""
        return dict(self._data.meta)


@ENVIRONMENTS.register("classification")
class ClassificationEnv(DatasetEnv, ContextualEnvironment):
    """K-class classification as a K-armed contextual bandit [Bae2025, Sec. 7, App. A].

    Reward 1 for the arm of the true class, else 0; regret 1 - reward. ``oracle`` plays the
    true class (zero regret); uniform play has expected regret (K - 1) / K per round on
    balanced data.

    Your own table instead of a built-in dataset: ``data`` (a ``.csv`` / ``.parquet`` path
    or a pandas DataFrame), ``label_column`` (the class column) and ``features`` (numeric columns,
    default all but the label), preprocessed as the built-in tables (see
    ``banditkit.datasets.table_dataset``; docs/own-data.md).

    Args:
        dataset: A name from ``banditkit.datasets.list_datasets("classification")``
            (default "digits", embedded in scikit-learn); not with ``data``.
        pool: Rows sampled without replacement per run to form the pool (None: all rows;
            the paper's experiments use 2500).
        encoding: "block" (disjoint one-hot blocks, dimension d*K), "onehot-id" ([x, e_k])
            or "shared" (every arm is x: for per-arm policies, see :func:`encode_arms`). A
            per-arm policy is served the shared context under "block" too
            (:meth:`serve_shared`).
        scale: Feature scaling before encoding ("auto": min-max to [-1, 1] per feature for
            tables, global for images; "l2" as NeuralUCB; see ``SCALINGS``).
        shuffle: Walk through permutations of the pool instead of drawing with replacement.
        categorical: mushroom / adult categorical encoding (see ``load_dataset``).
        image_size: mnist / fashion-mnist side: 14 (default), 7 or 28.
        subset: covertype variant: "auto", "full", "small", "first15120".
        split: "all", "train" or "test" (shuttle, adult, mnist, fashion-mnist).
        data_seed: Seed of random preprocessing; None: per run (see :class:`DatasetEnv`).
        data: The user's table: a path or a DataFrame. In a config a relative path is read
            from the config file's folder; in Python from the working directory.
        label_column: The class column of ``data`` (numbers or strings, at least 2
            classes). Not ``label``: that is the environment's name in tables and configs.
        features: The feature columns of ``data`` (None: every other column).

    Raises:
        ValueError: Both or neither source, or a bad table; the message names the column.

    Example:
        >>> env = ClassificationEnv(pool=100)
        >>> env.reset(0); env.context().arms.shape
        (10, 640)
    """

    @property
    def label(self) -> str:
        """For example "classification-digits" (a user table: its file stem)."""
        return f"classification-{self.source_name}"

    def _next_context(self) -> Context:
        if self._serve_shared:
            return self._next_shared_context()
        return Context(arms=self._next_row_arms())

    def best_action(self) -> int:
        """The true class of the current row."""
        return self._label

    def expected_rewards(self) -> np.ndarray:
        """Expected reward of every arm this round: 1 for the true class, else 0."""
        out = np.zeros(self.n_arms)
        out[self._label] = 1.0
        return out

    def _step(self, ctx: Context, action: Action) -> Step:
        reward = float(action == self._label)
        return Step(feedback=reward, reward=reward, regret=1.0 - reward)
