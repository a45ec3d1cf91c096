"""dtype and device: options of every neural policy, handed to the model toolkit.

Each neural policy takes ``dtype`` ("float64" | "float32") and ``device`` ("cpu" |
"cuda" | "cuda:N" | "auto"); a device that is not there is a ValueError naming it when
the policy is built; the dtype defaults to float32 (NDB: float64) and is part of the run
ids (NDB's at float64 and ``device`` at "cpu" stay out of ``get_params``: run ids
unchanged) and a run's metadata records both.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import banditkit as bk
from banditkit.core import POLICIES
from banditkit.core.params import quiet_defaults
from banditkit.core.serialization import POLICY_FILE, policy_from_bytes
from banditkit.core.statefile import pack_state
from banditkit.experiments.compute.execute import compute_run
from banditkit.experiments.config.resolved import RunSpec
from banditkit.policies.parts.models.compute import check_device, compute_options
from banditkit.testing import scripted_env

#: Every neural policy, with the family of its scripted environment.
NEURAL = {
    "neural-ucb": "contextual",
    "neural-ts": "contextual",
    "neurallog-ucb1": "contextual",
    "neurallog-ucb2": "contextual",
    "neurallog-ts1": "contextual",
    "neurallog-ts2": "contextual",
    "ncbf-ucb": "contextual",
    "neural-es": "contextual",
    "neural-phe": "contextual",
    "nvldb-ucb": "dueling",
    "nvldb-ts": "dueling",
    "nldb-ucb": "dueling",
    "nldb-ts": "dueling",
    "ndb-ucb": "dueling",
    "ndb-ts": "dueling",
    "onl-mnl": "assortment",
    "eps-greedy-mnl": "assortment",
}
#: The policies whose dtype is in their run ids: all but NDB, whose default stayed float64
#: (the others' became float32 on 2026-12-06: ``param(before=...)``, or NeuralLog's mode).
DTYPE_IN_IDS = {n for n in NEURAL if not n.startswith("ndb")}
CUDA = torch.cuda.is_available()


def _make(name: str, **extra: object) -> bk.Policy:
    cls = POLICIES.get(name)
    return bk.make_policy(name, **{**cls.contract_params, **extra}, seed=3)


def _play(policy: bk.Policy, name: str, horizon: int = 12) -> list:
    family = NEURAL[name]
    kind = "binary" if getattr(policy, "reward_kind", "real") == "binary" else "real"
    env = (
        scripted_env(family, reward_kind=kind)
        if family == "contextual"
        else scripted_env(family)
    )
    return [
        np.asarray(a).tolist()
        for a in bk.simulate(policy, env, horizon, seed=1).actions
    ]


def test_every_neural_policy_is_listed():
    torch_policies = {
        n for n in bk.list_policies() if getattr(POLICIES.get(n), "needs_torch", False)
    }
    assert set(NEURAL) == torch_policies


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_declares_dtype_and_device(name):
    cls = POLICIES.get(name)
    assert {"dtype", "device"} <= set(cls.param_names())
    quiet = quiet_defaults(cls)
    assert quiet["device"] == "cpu"
    assert ("dtype" in quiet) == (name not in DTYPE_IN_IDS)


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_the_default_dtype_is_float32_but_for_ndb(name):
    """docs/performance.md, "The default dtype": the rule kept NDB at float64."""
    assert _make(name).dtype == ("float64" if name.startswith("ndb") else "float32")


def test_neurallog_theory_mode_stays_float64():
    assert bk.make_policy("neurallog-ucb1", mode="theory").dtype == "float64"
    with pytest.raises(ValueError, match="the theory runs in float64"):
        bk.make_policy("neurallog-ucb1", mode="theory", dtype="float32")


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_defaults_stay_out_of_get_params_and_others_enter(name):
    params = _make(name).get_params()
    assert "device" not in params
    assert ("dtype" in params) == (name in DTYPE_IN_IDS)
    changed = _make(name, dtype="float32", device="auto").get_params()
    assert changed["dtype"] == "float32" and changed["device"] == "auto"


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_a_missing_device_is_a_value_error_naming_it(name):
    with pytest.raises(ValueError, match=r"device 'cuda:97' is not available"):
        _make(name, device="cuda:97")
    with pytest.raises(ValueError, match=r"device must be 'cpu', 'cuda', 'cuda:N'"):
        _make(name, device="gpu")
    with pytest.raises(ValueError, match=r"dtype must be"):
        _make(name, dtype="float16")


@pytest.mark.skipif(CUDA, reason="this machine has a CUDA device")
def test_cuda_without_a_gpu_names_the_device():
    with pytest.raises(
        ValueError, match=r"device 'cuda' is not available: PyTorch sees 0"
    ):
        check_device("device", "cuda")


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_explicit_cpu_and_auto_take_the_default_actions(name):
    base = _play(_make(name), name)
    assert _play(_make(name, device="cpu"), name) == base
    if not CUDA:  # "auto" is the CPU here
        assert _play(_make(name, device="auto"), name) == base


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_float32_runs_in_float32(name):
    policy = _make(name, dtype="float32")
    actions = _play(policy, name)
    assert len(actions) == 12
    floats = [t.dtype for t in _tensors(policy) if t.is_floating_point()]
    assert floats and set(floats) == {torch.float32}


def _tensors(policy: bk.Policy) -> list[torch.Tensor]:
    """The parameter tensors of a policy's network(s)."""
    model = getattr(policy, "model", None) or getattr(policy, "net", None)
    if hasattr(model, "mlp"):  # NeuralModel
        return list(model.mlp.parameters())
    if hasattr(model, "model"):  # UtilityNet
        return list(model.model.parameters())
    return list(model.params.values())  # NeuralLinearModel, NeuralEnsemble


def test_compute_options_resolve_auto_and_default_to_float64_cpu():
    assert compute_options(bk.make_policy("linucb")) == {
        "dtype": "float64",
        "device": "cpu",
    }
    expected = "cuda:0" if CUDA else "cpu"
    assert compute_options(_make("nvldb-ucb", device="auto", dtype="float32")) == {
        "dtype": "float32",
        "device": expected,
    }


@pytest.mark.parametrize("name", ["nvldb-ucb", "nldb-ts"])
def test_nvldb_defaults_float32_and_distinct_duels_and_old_states_load_as_saved(name):
    """The defaults changed on 2026-12-06 (``param(before=...)``): both are in the run
    ids, and a state saved before (its parameters without them) is the float64,
    every-duel policy it was when it loads."""
    new = _make(name)
    assert (new.dtype, new.distinct_duels) == ("float32", True)
    assert {
        "dtype": "float32",
        "distinct_duels": True,
    }.items() <= new.get_params().items()
    old = _make(name, dtype="float64", distinct_duels=False)
    assert {
        "dtype": "float64",
        "distinct_duels": False,
    }.items() <= old.get_params().items()
    _play(old, name, horizon=6)
    saved = old.state_dict()
    for key in ("dtype", "distinct_duels"):  # as the version before the change saved it
        del saved["params"][key]
    members = pack_state(saved, POLICY_FILE, policy=saved["policy"])
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    loaded = policy_from_bytes(buffer.getvalue(), expect=name)
    assert (loaded.dtype, loaded.distinct_duels) == ("float64", False)
    assert loaded.get_params() == old.get_params()
    env = scripted_env("dueling")
    env.reset(5)
    for _ in range(4):  # both go on alike
        ctx = env.context()
        action = old.act(ctx)
        assert np.array_equal(loaded.act(ctx), action)
        feedback = env.step(action).feedback
        old.update(ctx, action, feedback)
        loaded.update(ctx, action, feedback)
    with pytest.raises(ValueError, match="other hyper-parameters"):
        _make(name).load_state_dict(saved)  # the new defaults are another policy


def test_a_run_records_its_dtype_and_device():
    spec = RunSpec(
        "logistic",
        {"d": 3, "n_arms": 3},
        "neural-ucb",
        {"width": 4, "steps": 2, "dtype": "float32"},
        0,
        5,
    )
    record = compute_run(spec)
    assert record.ok and record.meta["compute"] == {"dtype": "float32", "device": "cpu"}
    linear = compute_run(RunSpec("logistic", {"d": 3, "n_arms": 3}, "linucb", {}, 0, 5))
    assert linear.meta["compute"] == {"dtype": "float64", "device": "cpu"}


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(NEURAL))
def test_cuda_float64_takes_the_cpu_actions(name):
    """On a GPU in float64 the actions are the CPU's (up to near ties; short runs)."""
    cpu = _play(_make(name), name)
    gpu = _play(_make(name, device="cuda"), name)
    assert cpu == gpu
