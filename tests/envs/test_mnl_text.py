"""The semi-synthetic text environment on a small corpus the test writes."""

import numpy as np
import pytest

import banditkit as bk
from banditkit.envs.mnl_text import load_corpus, text_utilities

GOOD = ["great", "wonderful", "superb", "moving", "brilliant"]
BAD = ["awful", "boring", "dull", "terrible", "waste"]


def write_corpus(root, n=60):
    rng = np.random.default_rng(0)
    for i in range(n):
        label = "pos" if i % 2 else "neg"
        words = rng.choice(GOOD if label == "pos" else BAD, 6).tolist()
        words += rng.choice(["film", "plot", "actor", "scene", "movie"], 4).tolist()
        folder = root / ("train" if i < 40 else "test") / label
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}.txt").write_text(" ".join(words))
    (root / "train" / "unsup").mkdir()
    (root / "train" / "unsup" / "x.txt").write_text("ignored")


def test_text_environment_learns_the_labels_and_plays_held_out_texts(tmp_path):
    write_corpus(tmp_path)
    texts, labels = load_corpus(tmp_path)
    assert len(texts) == 60 and set(labels) == {"pos", "neg"}
    env = bk.make_env(
        "mnl-text",
        corpus=str(tmp_path),
        n_items=8,
        capacity=3,
        n_components=4,
        hidden=4,
        steps=300,
        lr=0.05,
    )
    run = bk.simulate(bk.make_policy("oracle-assortment"), env, horizon=5, seed=0)
    assert np.all(run.regret == 0)
    assert env.accuracy > 0.9
    X, u, _ = text_utilities(
        str(tmp_path), n_components=4, hidden=4, steps=300, lr=0.05
    )
    assert X.shape == (12, 4)  # 20 % of 60 held out
    env.reset(1)
    ctx = env.context()
    rows = [int(np.flatnonzero((x == X).all(axis=1))[0]) for x in ctx.arms]
    assert len(set(rows)) == 8  # distinct held-out texts
    step = env.step(env.best_action())
    assert step.regret == 0.0
    # positive texts get the larger utilities
    held_pos = [i for i, x in enumerate(X) if u[i] > 0]
    assert 0 < len(held_pos) < 12


def test_table_corpus_and_errors(tmp_path):
    import pandas as pd

    table = pd.DataFrame(
        {"review": ["good fun"] * 5 + ["bad dull"] * 5, "y": ["a"] * 5 + ["b"] * 5}
    )
    table.to_csv(tmp_path / "c.csv", index=False)
    texts, labels = load_corpus(
        tmp_path / "c.csv", text_column="review", label_column="y"
    )
    assert texts[0] == "good fun" and labels[-1] == "b"
    with pytest.raises(ValueError, match="no column 'text'"):
        load_corpus(tmp_path / "c.csv")
    with pytest.raises(ValueError, match="aclImdb"):
        load_corpus(tmp_path / "missing")
    env = bk.make_env("mnl-text", corpus=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="corpus"):
        env.reset(0)
