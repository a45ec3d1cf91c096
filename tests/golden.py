"""Pinned seeded runs: the actions and regrets of every contextual policy, recorded once.

Refactors of shared code (the platform, the model toolkit) must keep results: the test in
``tests/test_golden.py`` replays the runs below and compares them bitwise with the arrays stored
in ``tests/data/golden.npz``. Regenerate that file only when a change of results is intended,
and say so in the commit:

    python -m tests.golden

Platform variants. A few neural runs on the 640-feature ``digits`` instance take other
actions on another CPU or BLAS build: their floating-point sums round differently, and a
near tie in an arg-max then flips. Such a run is recorded once more, on that platform, in
``tests/data/golden-variants/<name>.npz`` (only the cases that differ from the main record,
with the platform's description); the test accepts the main record or a variant. Add a
variant only when the code is unchanged and the platform differs, never to absorb a change:

    python -m tests.golden --variant NAME

Platform runs (``PLATFORM_RUNS``): the runs known to meet such a tie are pinned per
platform only, in the variant whose recorded platform is the machine's (``platform()``),
which ``python -m tests.golden`` writes with the main record; on a platform without a
record of its own the test skips them and names the command that records them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import banditkit as bk

GOLDEN = Path(__file__).parent / "data" / "golden.npz"
VARIANTS = Path(__file__).parent / "data" / "golden-variants"

#: (label, environment name, environment parameters)
ENVS: list[tuple[str, str, dict[str, Any]]] = [
    ("h1", "logistic", {"h": "h1", "d": 5, "n_arms": 4}),
    ("digits", "classification", {"dataset": "digits"}),
]

#: The neural policies' dtype before float32 became their default (2026-12-06).
_FLOAT64: dict[str, Any] = {"dtype": "float64"}

_WIDTHS_V0: dict[str, Any] = {
    **_FLOAT64,
    "nu": 1.0,
    "effdim_kind": "diagonal",
    "scale_features": False,
    "bonus": "table",
}

_NEURAL_V0: dict[str, Any] = {
    **_FLOAT64,
    "nu": 1.0,
    "lam": 1.0,
    "width": 20,
    "steps": 100,
    "update_every": 1,
}

#: (policy name, parameters, horizon): neural policies run fewer rounds. Policies after
#: ``N_EVERYWHERE`` (full p x p Grams) run on the small "h1" instance only.
POLICIES: list[tuple[str, dict[str, Any], int]] = [
    ("random", {}, 120),
    ("eps-greedy", {}, 120),
    ("linucb", {}, 120),
    ("lints", {}, 120),
    ("glm-ucb", {"update_every": 1}, 120),  # the default before it became 10
    ("glm-ts", {"update_every": 1}, 120),
    ("logistic-ucb1", {}, 120),
    ("ada-ofu-ecolog", {}, 120),
    # the defaults before they became the NeuralUCB shuttle benchmark's settings
    ("neural-ucb", {"lr": 0.001, "backtrack": 0, **_NEURAL_V0}, 60),
    ("neural-ts", {"lr": 0.001, "backtrack": 0, **_NEURAL_V0}, 60),
    # the widths before the calibration of [logistic-fidelity] (docs/logistic.md,
    # section "Fidelity"): diagonal d_eff, raw NTK gradients, the constants of table B
    ("ncbf-ucb", {**_WIDTHS_V0, "bonus": None}, 60),
    ("neurallog-ucb1", _WIDTHS_V0, 60),
    ("neurallog-ucb2", _WIDTHS_V0, 60),
    ("neurallog-ts1", _WIDTHS_V0, 60),
    ("neurallog-ts2", _WIDTHS_V0, 60),
    # full Grams: h1 only
    (
        "neurallog-ucb2",
        {**_WIDTHS_V0, "effdim_kind": "full", "gram": "full", "update_every": 3},
        40,
    ),
    ("neurallog-ucb1", {"mode": "theory"}, 30),
]

N_EVERYWHERE = 15

SEEDS = (0, 1)

#: Runs whose arg-max meets a near tie that the platform's rounding decides (NeuralUCB
#: and NeuralTS on digits at their old defaults): pinned per platform (module docstring).
PLATFORM_RUNS = frozenset({"digits/8-neural-ucb/0", "digits/9-neural-ts/1"})


def key(env_label: str, index: int, seed: int) -> str:
    """The npz member prefix of one run."""
    name, _, _ = POLICIES[index]
    return f"{env_label}/{index}-{name}/{seed}"


def play(env_label: str, index: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Run one pinned configuration with a loop of its own; return (actions, regrets)."""
    name, params, horizon = POLICIES[index]
    _, env_name, env_params = next(e for e in ENVS if e[0] == env_label)
    env = bk.make_env(env_name, **env_params)
    policy = bk.make_policy(name, seed=seed, **params)
    env.reset(seed)
    policy.begin(horizon)
    policy.attach(env)
    actions, regrets = [], []
    for _ in range(horizon):
        ctx = env.context()
        assert ctx is not None
        action = policy.act(ctx)
        step = env.step(action)
        policy.update(ctx, action, step.feedback)
        actions.append(action)
        regrets.append(step.regret)
    return np.asarray(actions, dtype=np.int64), np.asarray(regrets, dtype=np.float64)


def cases() -> list[tuple[str, int, int]]:
    """Every (environment label, policy index, seed) pinned."""
    return [
        (e[0], i, s)
        for e in ENVS
        for i in range(len(POLICIES) if e[0] == "h1" else N_EVERYWHERE)
        for s in SEEDS
    ]


def platform() -> str:
    """A one-line description of this machine's numerical stack."""
    import platform as _platform

    import torch

    return (
        f"{_platform.machine()} {_platform.processor() or ''} torch {torch.__version__} "
        f"({torch.backends.cpu.get_cpu_capability()}), numpy {np.__version__}"
    )


def records() -> list[dict[str, np.ndarray]]:
    """The main record, then every platform variant."""
    found = [GOLDEN, *sorted(VARIANTS.glob("*.npz"))]
    out = []
    for path in found:
        with np.load(path) as data:
            out.append({k: data[k] for k in data.files})
    return out


def record_variant(name: str) -> None:
    """Record the cases whose run here differs from the main record as variant ``name``."""
    main_record = records()[0]
    arrays: dict[str, np.ndarray] = {"platform": np.array(platform())}
    for env_label, index, seed in cases():
        actions, regrets = play(env_label, index, seed)
        prefix = key(env_label, index, seed)
        if np.array_equal(actions, main_record[prefix + "/actions"]) and np.array_equal(
            regrets, main_record[prefix + "/regret"]
        ):
            continue
        arrays[prefix + "/actions"] = actions
        arrays[prefix + "/regret"] = regrets
    VARIANTS.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(VARIANTS / f"{name}.npz", **arrays)
    print(f"wrote {(len(arrays) - 1) // 2} differing runs to {VARIANTS / name}.npz")


def main() -> None:
    """Record every case into ``GOLDEN``."""
    import sys

    if "--variant" in sys.argv:
        record_variant(sys.argv[sys.argv.index("--variant") + 1])
        return
    arrays: dict[str, np.ndarray] = {}
    here: dict[str, np.ndarray] = {"platform": np.array(platform())}
    for env_label, index, seed in cases():
        actions, regrets = play(env_label, index, seed)
        prefix = key(env_label, index, seed)
        into = here if prefix in PLATFORM_RUNS else arrays
        into[prefix + "/actions"] = actions
        into[prefix + "/regret"] = regrets
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(GOLDEN, **arrays)
    print(f"wrote {len(arrays) // 2} runs to {GOLDEN}")
    mine = platform_record_path()
    np.savez_compressed(mine, **here)
    print(f"wrote the {len(PLATFORM_RUNS)} platform runs to {mine}")


def platform_record_path() -> Path:
    """The variant file holding this platform's runs (an existing one, or a new name)."""
    for path in sorted(VARIANTS.glob("*.npz")):
        with np.load(path) as data:
            if "platform" in data.files and str(data["platform"]) == platform():
                return path
    VARIANTS.mkdir(parents=True, exist_ok=True)
    slug = "".join(c if c.isalnum() else "-" for c in platform().lower()).strip("-")
    return VARIANTS / f"{slug}.npz"


if __name__ == "__main__":
    main()
