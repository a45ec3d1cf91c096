"""The run ids of every shipped paper config are pinned.

A run id is a hash of everything that determines a run's numbers (environment and policy
with all their parameters, seed, horizon; ``experiments.runs.run_id``). ``reproduce`` and
``run`` resume by id, so a change of ids makes every stored run of a config look missing
and recomputes it. That is right when the numbers change (a new default, a re-tune) and
wrong when they do not (a new option whose default keeps the old behaviour: keep it out
of ``get_params`` at its default, as ``logistic-ucb1``'s ``fit`` and ``ucb-mnl``'s
``warmup`` do). This test makes every change of ids deliberate: when one is intended,
re-pin with

    BANDITKIT_DATA=... python tests/experiments/test_run_ids.py --write

and say in the commit which configs changed and why.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from banditkit.experiments.config.papers import list_papers, paper_configs, paper_dir
from banditkit.experiments.config.resolve import resolve

PINNED = Path(__file__).resolve().parent.parent / "data" / "run_ids.json"


def config_ids() -> dict[str, list[str]]:
    """Per shipped paper config ("paper/file"): the sorted distinct ids of its full runs.

    (Labels with identical settings share their runs, e.g. Table 2 of the logistic paper.)
    """
    out = {}
    for paper in list_papers():
        for path in paper_configs(paper_dir(paper)):
            out[f"{paper}/{path.name}"] = sorted({s.id for s in resolve(path).runs()})
    return out


def fingerprint(ids: list[str]) -> list[int | str]:
    """[number of runs, a hash of their sorted ids]."""
    return [len(ids), hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]]


@pytest.fixture(scope="module")
def current() -> dict[str, list[str]]:
    return config_ids()


def test_paper_configs_keep_their_run_ids(current: dict[str, list[str]]) -> None:
    pinned = json.loads(PINNED.read_text())
    now = {name: fingerprint(ids) for name, ids in current.items()}
    changed = sorted(k for k in now.keys() & pinned.keys() if now[k] != pinned[k])
    added, removed = sorted(now.keys() - pinned.keys()), sorted(pinned.keys() - now)
    assert not (changed or added or removed), (
        f"run ids changed for {changed}, new configs {added}, removed {removed}: stored "
        "runs of these configs would be recomputed. If the numbers change on purpose, "
        "re-pin (this module's docstring); otherwise keep new options out of get_params "
        "at their defaults."
    )


def test_every_config_has_runs(current: dict[str, list[str]]) -> None:
    assert len(current) >= 5 and all(len(ids) > 0 for ids in current.values())


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/experiments/test_run_ids.py --write")
    table = {name: fingerprint(ids) for name, ids in sorted(config_ids().items())}
    PINNED.write_text(json.dumps(table, indent=1) + "\n")
    print(f"pinned {len(table)} configs in {PINNED}")
