"""Your own data: a classification bandit from a table, an experiment config, a logged replay.

Write it out with ``banditkit examples own_data.py`` and run it with ``python own_data.py``
(about a minute; the test suite runs it with ``BANDITKIT_EXAMPLE_QUICK=1``). It writes its files under ``own-data-example/`` in the
working directory: a table ``animals.csv``, a config ``animals.yaml`` and its results, and
a log ``log.parquet``. See docs/own-data.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

import banditkit as bk
from banditkit import ope

QUICK = os.environ.get("BANDITKIT_EXAMPLE_QUICK") == "1"
HORIZON = 100 if QUICK else 1000
HERE = Path("own-data-example")
HERE.mkdir(exist_ok=True)
rng = np.random.default_rng(0)

# 1. A table with a class column: two numeric features, a class name per row.
n = 600
x = rng.normal(size=(n, 2))
species = np.where(x[:, 0] + 0.3 * rng.normal(size=n) > 0, "cat", "dog")
species[x[:, 1] > 1.0] = "eel"
table = pd.DataFrame({"weight": x[:, 0], "length": x[:, 1], "species": species})
table.to_csv(HERE / "animals.csv", index=False)

# 2. From Python: a DataFrame (or the file) and simulate.
env = bk.make_env("classification", data=table, label_column="species", pool=500)
for name in ("random", "linucb"):
    run = bk.simulate(bk.make_policy(name), env, horizon=HORIZON, seed=0)
    print(f"{name:<8} regret R(T) = {run.cumulative_regret[-1]:.0f} over T = {HORIZON}")

# 3. From a config: a relative path is read from the config file's folder.
(HERE / "animals.yaml").write_text(
    f"""name: animals
horizon: {HORIZON}
seeds: 2
env:
  name: classification
  data: animals.csv
  label_column: species
  pool: 500
policies:
  - name: random
  - name: linucb
"""
)
result = bk.run_experiment(
    HERE / "animals.yaml", HERE / "animals-out", backend="serial", figures=not QUICK
)
print("experiment ok:", result.ok, "->", result.out)

# 4. A logged bandit dataset: context columns, the logged action, its reward, propensity.
k = 3
actions = rng.integers(k, size=n * 5)
context = rng.normal(size=(n * 5, 2))
best = np.where(context[:, 0] > 0, 0, 1)
click = rng.random(n * 5) < np.where(actions == best, 0.6, 0.2)
log = pd.DataFrame(
    {
        "u0": context[:, 0],
        "u1": context[:, 1],
        "action": actions,
        "reward": click.astype(float),
        "propensity": 1.0 / k,
    }
)
log.to_parquet(HERE / "log.parquet", index=False)

replay_env = bk.make_env("log-replay", data=HERE / "log.parquet")
run = bk.simulate(bk.make_policy("linucb"), replay_env, horizon=HORIZON // 2, seed=0)
replayed = float(run.reward.mean())
print(
    f"linucb replayed: mean reward {replayed:.3f} over {run.reward.shape[0]} accepted "
    f"events ({run.events_read[-1]} read); the log's mean is {log['reward'].mean():.3f}"
)

# 5. The same log through the off-policy estimators (the uniform policy: its true value).
bandit_log = replay_env.bandit_log()
estimates = ope.evaluate(
    bandit_log, bandit_log.uniform_target(), methods=("ips", "snips")
)
print(ope.format_estimates(estimates))
