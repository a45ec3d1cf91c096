"""A semi-synthetic MNL environment from any labelled text corpus [Hwang2025, App. G].

The paper's IMDB experiment (Fig. 5), written for any corpus of texts with two labels:

1. features: scikit-learn's ``TfidfVectorizer`` (default parameters), then
   ``TruncatedSVD(n_components)`` (30 in the paper), fit on the whole corpus;
2. a fixed shuffle (seed 0) splits the texts into a training part (``train_fraction``, 40k
   of the 50k IMDB reviews) and a held-out part;
3. the true utility is a two-layer sigmoid network with ``hidden`` units (32), trained as a
   binary classifier of the label on the training part (full-batch Adam, BCE with logits);
   the utility of a text is the network's logit;
4. each round shows ``n_items`` (100) held-out texts drawn without replacement, K = 5, and
   the customer chooses by the MNL model with these utilities (outside option weight 1).

The corpus, the features and the network are built once per process for a given corpus and
settings (seed 0, as the paper builds them once); the seed of a run draws the texts shown
and the choices. The IMDB reviews (Maas et al. 2011) are not shipped with banditkit: download
``aclImdb_v1.tar.gz`` from https://ai.stanford.edu/~amaas/data/sentiment/ and extract it,
then pass ``corpus=PATH/aclImdb`` or put it at ``$BANDITKIT_DATA/imdb``.

Corpus formats (``corpus``):

* a directory: every ``*.txt`` file below it is one text whose label is the name of its
  parent directory (the aclImdb layout ``train/pos/*.txt``, ``test/neg/*.txt``); directories
  named ``unsup`` are skipped;
* a ``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet`` table with columns ``text`` and ``label``
  (names set by ``text_column`` / ``label_column``).

There must be exactly two labels; ``positive`` names the one coded 1 (default: "pos" if it
is a label, else the larger of the two in sorted order).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from banditkit.core import ENVIRONMENTS
from banditkit.core.lazy import pd  # imported at first use
from banditkit.core.params import POSITIVE, Check, Free, Int, Maybe, Real, param
from banditkit.datasets.storage import data_home
from banditkit.envs.mnl import MNLChoiceEnv

if TYPE_CHECKING:
    from banditkit import nn
else:
    from banditkit.core.lazy import lazy_import

    nn = lazy_import("banditkit.nn")  # PyTorch is imported at first use

__all__ = ["TextMNLEnv", "load_corpus", "text_utilities"]

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".parquet")


def _default_corpus() -> Path:
    return data_home() / "imdb"


def load_corpus(
    corpus: str | os.PathLike[str],
    *,
    text_column: str = "text",
    label_column: str = "label",
) -> tuple[list[str], list[str]]:
    """Texts and their labels from a directory of ``*.txt`` files or a table (module docstring).

    Raises:
        ValueError: If ``corpus`` does not exist, has an unknown format or lacks a column.
    """
    path = Path(corpus)
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*.txt") if "unsup" not in p.relative_to(path).parts
        )
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
        return texts, [p.parent.name for p in files]
    if not path.is_file():
        raise ValueError(
            f"corpus {str(path)!r} does not exist. The IMDB reviews are not shipped with "
            "banditkit: download aclImdb_v1.tar.gz from "
            "https://ai.stanford.edu/~amaas/data/sentiment/, extract it and pass "
            "corpus=PATH/aclImdb (or put it at $BANDITKIT_DATA/imdb); any directory of "
            "<label>/*.txt files or a table with text and label columns works."
        )
    if path.suffix not in TABLE_SUFFIXES:
        raise ValueError(
            f"corpus must be a directory or a {', '.join(TABLE_SUFFIXES)} file; got {str(path)!r}."
        )
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
    elif path.suffix == ".jsonl":
        table = pd.read_json(path, lines=True)
    else:
        table = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",")
    for column in (text_column, label_column):
        if column not in table.columns:
            raise ValueError(
                f"corpus {str(path)!r} has no column {column!r}; columns: {list(table.columns)}."
            )
    return table[text_column].astype(str).tolist(), table[label_column].astype(
        str
    ).tolist()


#: The options of ``text_utilities`` (the environment's parameters of the same names).
_PIPELINE_OPTIONS = (
    "text_column",
    "label_column",
    "positive",
    "n_components",
    "hidden",
    "train_fraction",
    "steps",
    "lr",
)


def _as_text(name: str, value: Any) -> str:
    """A path or a name, stored as a str."""
    return str(value)


@functools.lru_cache(maxsize=4)
def text_utilities(
    corpus: str,
    *,
    text_column: str = "text",
    label_column: str = "label",
    positive: str | None = None,
    n_components: int = 30,
    hidden: int = 32,
    train_fraction: float = 0.8,
    steps: int = 500,
    lr: float = 0.01,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Held-out features (n, n_components), their true utilities (n,), training accuracy.

    Cached per process: the pipeline of the module docstring runs once per argument set.
    """
    import torch
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, labels = load_corpus(
        corpus, text_column=text_column, label_column=label_column
    )
    names = sorted(set(labels))
    if len(names) != 2:
        raise ValueError(
            f"corpus must have exactly two labels; got {len(names)}: {names[:10]}."
        )
    if positive is None:
        positive = "pos" if "pos" in names else names[1]
    elif positive not in names:
        raise ValueError(
            f"positive must be one of the labels {names}; got {positive!r}."
        )
    y = np.array([1.0 if label == positive else 0.0 for label in labels])
    tfidf = TfidfVectorizer().fit_transform(texts)
    k = min(n_components, tfidf.shape[1] - 1)
    if k < 1:
        raise ValueError("corpus has too small a vocabulary for a truncated SVD.")
    X = TruncatedSVD(n_components=k, random_state=0).fit_transform(tfidf)
    order = np.random.default_rng(0).permutation(len(texts))
    n_train = round(train_fraction * len(texts))
    if not 1 <= n_train < len(texts):
        raise ValueError(
            f"train_fraction {train_fraction} leaves no training or no held-out text "
            f"among {len(texts)}."
        )
    seen, held = order[:n_train], order[n_train:]
    net = nn.MLP.plain(
        k,
        width=hidden,
        activation="sigmoid",
        generator=torch.Generator().manual_seed(0),
    )
    nn.train(
        net,
        X[seen],
        y[seen],
        lam=0.0,
        optimizer="adam",
        lr=lr,
        steps=steps,
        reduction="mean",
    )
    with torch.no_grad():
        logits = net(torch.tensor(X)).numpy()
    accuracy = float(np.mean((logits[seen] > 0) == (y[seen] > 0.5)))
    return np.ascontiguousarray(X[held]), logits[held].copy(), accuracy


@ENVIRONMENTS.register("mnl-text")
class TextMNLEnv(MNLChoiceEnv):
    """MNL choices among held-out texts, utilities from a classifier [Hwang2025, App. G].

    Args:
        corpus: The corpus (module docstring); None is ``$BANDITKIT_DATA/imdb``.
        n_items: Texts shown per round (N = 100).
        capacity: K (5).
        n_components: SVD dimension d (30).
        hidden: Hidden units of the true utility network (32).
        train_fraction: Share of the texts that train the network (0.8: 40k of 50k).
        steps: Adam steps of the classifier.
        lr: Adam step size of the classifier.
        text_column, label_column: Column names of a table corpus.
        positive: The label coded 1 (None: "pos", else the larger label).
        revenues: "uniform" (all 1) or "item" (U[0.1, 1]).

    The corpus is read at the first ``reset``, so a missing corpus is reported when a run
    starts, with the instructions of the module docstring.
    """

    corpus: str | None = param(Maybe(Check(_as_text)), default=None)
    n_components: int = param(Int(low=1), default=30)
    hidden: int = param(Int(low=1), default=32)
    train_fraction: float = param(
        Real(low=0.0, high=1.0, low_open=True, high_open=True), default=0.8
    )
    steps: int = param(Int(low=1), default=500)
    lr: float = param(POSITIVE, default=0.01)
    text_column: str = param(Free(), default="text")
    label_column: str = param(Free(), default="label")
    positive: str | None = param(Free(), default=None)

    def _resolve(self) -> None:
        super()._resolve()
        self.accuracy = float("nan")
        self._X = np.zeros((0, 1))
        self._utilities = np.zeros(0)

    @property
    def label(self) -> str:
        """For example "mnl-text-aclImdb"."""
        return f"mnl-text-{Path(self.corpus or _default_corpus()).stem}"

    def _reset(self) -> None:
        options = {name: getattr(self, name) for name in _PIPELINE_OPTIONS}
        corpus = str(self.corpus or _default_corpus())
        X, u, self.accuracy = text_utilities(corpus, **options)
        if X.shape[0] < self.n_items:
            raise ValueError(
                f"n_items = {self.n_items} but the corpus holds only {X.shape[0]} held-out "
                "texts; lower n_items or train_fraction."
            )
        self._X, self._utilities = X, u
        self._shown = np.zeros(0, dtype=np.intp)

    def _round_utilities(self, X: np.ndarray) -> np.ndarray:
        return self._utilities[self._shown]

    def _features(self) -> np.ndarray:
        self._shown = self.context_rng.choice(
            self._X.shape[0], self.n_items, replace=False
        )
        return self._X[self._shown]
