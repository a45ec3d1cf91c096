"""Hostile policy files: forged with a recomputed digest, oversized, bombs, odd dtypes.

A forger can recompute the digest (it is no signature), so every case here writes a file
that passes the digest check: :func:`_forge` builds the ``.npz`` from scratch (skeleton,
arrays, header) with its own SHA-256, independently of ``save_policy``. What stops such a
file is what ``load_policy`` checks after the digest: the allow-lists, the sizes and
dtypes, and the state the policy declares.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import banditkit as bk
from banditkit.errors import ConfigError, PolicyFileError

# --- a forger, independent of save_policy -------------------------------------------


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _split(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = obj
        return {"__array__": name}
    if isinstance(obj, dict):
        return {k: _split(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_split(v, arrays) for v in obj]
    return obj


def _digest(skeleton: str, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(skeleton.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(json.dumps([name, a.dtype.str, list(a.shape)]).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _forge(
    path: Path,
    state: dict[str, Any],
    *,
    members: dict[str, bytes] | None = None,
    compress: int = zipfile.ZIP_STORED,
) -> Path:
    """Write ``state`` as a policy file with a correct digest; ``members`` replace bytes."""
    arrays: dict[str, np.ndarray] = {}
    skeleton = json.dumps(_split(state, arrays))
    header = {
        "format": "banditkit-policy",
        "version": 1,
        "policy": state["policy"],
        "sha256": _digest(skeleton, arrays),
    }
    data = {f"{n}.npy": _npy(a) for n, a in arrays.items()}
    data["__skeleton__.npy"] = _npy(np.array(skeleton))
    data["__banditkit__.npy"] = _npy(np.array(json.dumps(header)))
    data.update(members or {})
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        for name, content in data.items():
            z.writestr(name, content)
    return path


def _played(name: str = "linucb", rounds: int = 6, **params: Any) -> bk.Policy:
    policy = bk.make_policy(name, seed=1, **params)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        ctx = bk.Context(arms=rng.standard_normal((4, 3)))
        policy.update(ctx, policy.act(ctx), float(rng.random()))
    return policy


# --- item 1: a file or config names no arbitrary callable ---------------------------

_SKLEARN_PARAMS = {
    "explorer": "eps-greedy",
    "n_bootstrap": 1,
    "epsilon": 0.1,
    "temperature": 0.1,
    "ucb_quantile": 0.8,
    "refit_every": 10,
    "use_partial_fit": True,
    "seed": 0,
}


def _sklearn_state(estimator: str, estimator_params: dict[str, Any]) -> dict[str, Any]:
    params = {
        "estimator": estimator,
        "estimator_params": estimator_params,
        **_SKLEARN_PARAMS,
    }
    rng = np.random.default_rng(0).bit_generator.state
    return {
        "policy": "sklearn",
        "params": params,
        "d": None,
        "t": 0,
        "horizon": None,
        "n_updates": 0,
        "rng": rng,
        "state": {},
    }


def test_a_forged_sklearn_file_cannot_run_a_script(tmp_path):
    marker = tmp_path / "ran"
    script = f"open({str(marker)!r}, 'w').write('x')"
    path = _forge(
        tmp_path / "p.bk",
        _sklearn_state(
            "sklearn.utils._testing.assert_run_python_script_without_output",
            {"source_code": script},
        ),
    )
    with pytest.raises(PolicyFileError, match="ALLOWED_ESTIMATORS"):
        bk.load_policy(path)
    assert not marker.exists()


def test_a_forged_sklearn_file_cannot_delete_a_folder(tmp_path):
    victim = tmp_path / "keep"
    victim.mkdir()
    (victim / "data.txt").write_text("precious")
    path = _forge(
        tmp_path / "p.bk",
        _sklearn_state("sklearn.datasets.clear_data_home", {"data_home": str(victim)}),
    )
    with pytest.raises(PolicyFileError, match="estimator must be one of"):
        bk.load_policy(path)
    assert (victim / "data.txt").read_text() == "precious"


@pytest.mark.parametrize(
    "estimator",
    [
        "sklearn.datasets.dump_svmlight_file",
        "sklearn.datasets._svmlight_format_io.dump_svmlight_file",
        "os.system",
        "builtins.eval",
        "sklearn.ensemble.BaggingRegressor",  # a meta-estimator: not on the list
        "sklearn.linear_model._ridge.os.system",
    ],
)
def test_a_config_cannot_name_a_callable(tmp_path, estimator):
    target = tmp_path / "written.txt"
    params = {"X": [[1.0]], "y": [1.0], "f": str(target)}
    with pytest.raises(ValueError, match="estimator must be one of"):
        bk.make_policy("sklearn", estimator=estimator, estimator_params=params)
    config = {
        "name": "hostile",
        "horizon": 5,
        "seeds": 1,
        "envs": [{"name": "linear", "d": 2, "n_arms": 3}],
        "policies": [
            {"name": "sklearn", "estimator": estimator, "estimator_params": params}
        ],
    }
    file = tmp_path / "hostile.yaml"
    file.write_text(yaml.safe_dump(config))
    with pytest.raises((ConfigError, ValueError), match="estimator"):
        bk.run_experiment(file, out=tmp_path / "out")
    assert not target.exists()


def test_allowed_estimators_are_plain_scikit_learn_learners():
    """Each allowed path is a classifier or regressor that scikit-learn itself lists.

    Independent check: ``sklearn.utils.all_estimators``; none takes another estimator, a
    callable or a cache folder.
    """
    from sklearn.utils import all_estimators

    from banditkit.policies.baselines.sklearn_arms import ALLOWED_ESTIMATORS

    listed = {
        f"{cls.__module__.split('._')[0]}.{name}": cls
        for name, cls in all_estimators(type_filter=["classifier", "regressor"])
    }
    assert set(listed) >= ALLOWED_ESTIMATORS
    risky = {"estimator", "estimators", "regressor", "func", "memory", "callback"}
    for path in ALLOWED_ESTIMATORS:
        assert not risky & set(listed[path]().get_params()), path


def test_an_installed_entry_point_estimator_is_allowed(monkeypatch, tmp_path):
    from importlib.metadata import EntryPoint

    from banditkit.policies.baselines import sklearn_arms

    ep = EntryPoint(
        "mine.Ridge", "sklearn.linear_model:Ridge", sklearn_arms.ESTIMATOR_ENTRY_POINTS
    )
    monkeypatch.setattr(sklearn_arms, "_installed_estimators", lambda: {ep.name: ep})
    policy = bk.make_policy("sklearn", estimator="mine.Ridge", n_bootstrap=2)
    assert policy.estimator == "mine.Ridge"
    with pytest.raises(ValueError, match="entry-point group"):
        bk.make_policy("sklearn", estimator="theirs.Ridge", n_bootstrap=2)


# --- missing files, expected policy -------------------------------------------------


def test_load_policy_checks_the_expected_name(tmp_path):
    bk.save_policy(_played(), tmp_path / "p.bk")
    assert bk.load_policy(tmp_path / "p.bk", expect="linucb").t == 6
    with pytest.raises(PolicyFileError, match="not the expected 'lints'"):
        bk.load_policy(tmp_path / "p.bk", expect="lints")


def test_an_unregistered_policy_name_is_refused(tmp_path):
    state = _played().state_dict()
    state["policy"] = "os.system"
    with pytest.raises(PolicyFileError, match="not registered"):
        bk.load_policy(_forge(tmp_path / "p.bk", state))


# --- sizes and dtypes, before anything is allocated ---------------------------------


def _npy_header_only(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """A .npy member whose header declares ``shape`` but holds 16 bytes of data."""
    buf = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + bytes(16)


def test_a_member_declaring_a_huge_shape_is_refused_before_allocation(tmp_path):
    state = _played().state_dict()
    path = _forge(tmp_path / "p.bk", state)
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.startswith("a"))
    _forge(path, state, members={name: _npy_header_only((10**12,))})
    with pytest.raises(PolicyFileError, match="declares shape"):
        bk.load_policy(path)


def test_a_zip_bomb_is_refused_before_it_is_decompressed(tmp_path):
    """1 GB of zeros deflates to about 1 MB; the file is refused at its zip directory."""
    state = _played().state_dict()
    bomb = _npy(np.zeros(2**27))  # 1 GiB
    path = _forge(
        tmp_path / "p.bk",
        state,
        members={"a0.npy": bomb},
        compress=zipfile.ZIP_DEFLATED,
    )
    assert path.stat().st_size < 2**21
    with pytest.raises(PolicyFileError, match="compressed"):
        bk.load_policy(path)


def test_max_bytes_bounds_the_arrays(tmp_path):
    bk.save_policy(_played(), tmp_path / "p.bk")
    with pytest.raises(PolicyFileError, match="max_bytes=100"):
        bk.load_policy(tmp_path / "p.bk", max_bytes=100)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (np.zeros(3, dtype=complex), "real floats"),
        (np.array(["1.0", "2.0", "3.0"]), "real floats"),
        (np.array([np.nan, 0.0, 0.0]), "NaN or inf"),
        (np.array([np.inf, 0.0, 0.0]), "NaN or inf"),
    ],
    ids=["complex", "strings", "nan", "inf"],
)
def test_non_real_or_non_finite_arrays_are_refused(tmp_path, value, match):
    state = _played().state_dict()
    state["state"]["model"]["theta"] = value
    with pytest.raises(PolicyFileError, match=match):
        bk.load_policy(_forge(tmp_path / "p.bk", state))


def test_an_array_not_part_of_the_state_is_refused(tmp_path):
    state = _played().state_dict()
    path = _forge(tmp_path / "p.bk", state, members={"a999.npy": _npy(np.ones(2))})
    with pytest.raises(PolicyFileError):  # the digest or the unused member
        bk.load_policy(path)


# --- forged state that passes the digest --------------------------------------------


def _forged(policy: bk.Policy, edit) -> dict[str, Any]:
    state = policy.state_dict()
    edit(state)
    return state


def _set(keys: tuple[Any, ...], value: Any):
    def edit(state: dict[str, Any]) -> None:
        node = state
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


FORGERIES = {
    "theta of another shape": (
        "linucb",
        _set(("state", "model", "theta"), np.zeros(5)),
        "theta must have shape",
    ),
    "negative-definite inverse Gram": (
        "linucb",
        _set(("state", "model", "gram", "inverse"), -np.eye(3)),
        "positive-definite",
    ),
    "asymmetric Gram": (
        "glm-ucb",
        _set(("state", "design", "matrix"), np.triu(np.ones((3, 3))) + np.eye(3)),
        "symmetric",
    ),
    "t = -5": ("linucb", _set(("t",), -5), r"state\['t'\]"),
    "d = 0": ("linucb", _set(("d",), 0), r"state\['d'\]"),
    "n_updates = -1": ("linucb", _set(("n_updates",), -1), "n_updates"),
    "horizon = 0": ("linucb", _set(("horizon",), 0), "horizon"),
    "rng of another generator": (
        "linucb",
        _set(("rng",), {"bit_generator": "MT19937", "state": {}}),
        "rng",
    ),
    "negative counts (ucb1)": (
        "ucb1",
        _set(("state", "counts"), -np.ones(4)),
        "counts must be >= 0",
    ),
    "negative counts (per-arm)": (
        "linucb-per-arm",
        _set(("state", "counts"), -np.ones(4, dtype=np.int64)),
        "counts must be >= 0",
    ),
    "history rows of another width": (
        "linucb",
        _set(("state", "history", "X"), np.zeros((6, 4))),
        "X must have shape",
    ),
    "history lengths differ": (
        "glm-ts",
        _set(("state", "history", "y"), np.zeros(2)),
        "one length",
    ),
    "negative history weights": (
        "linucb",
        _set(("state", "history", "w"), -np.ones(6)),
        "w must be >= 0",
    ),
    "an ignored extra entry": (
        "linucb",
        _set(("state", "model", "extra"), np.ones(2)),
        "does not come back",
    ),
    "a Gram of another d": (
        "linucb",
        _set(("state", "model", "gram", "d"), 10**6),
        "d=",
    ),
    "sklearn arms out of range": (
        "sklearn",
        _set(("state", "row_arms"), np.full(6, 9, dtype=np.int64)),
        "row_arms",
    ),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_forged_state_with_a_recomputed_digest_is_refused(tmp_path, forgery):
    name, edit, match = FORGERIES[forgery]
    params = {"n_bootstrap": 2, "estimator": "sklearn.linear_model.Ridge"}
    policy = _played(name, **(params if name == "sklearn" else {}))
    path = _forge(tmp_path / "p.bk", _forged(policy, edit))
    with pytest.raises(PolicyFileError, match=match):
        bk.load_policy(path)


@pytest.mark.parametrize("name", ["linucb", "glm-ucb", "neural-ucb", "lin-es"])
def test_a_forged_d_is_refused_before_the_policy_allocates_for_it(tmp_path, name):
    """d = 30000 would make a d x d Gram of 7 GB; an empty (0, d) array does not vouch."""
    state = _played(name).state_dict()
    state["d"] = 30_000
    state["state"]["padding"] = np.zeros((0, 30_000))
    with pytest.raises(PolicyFileError, match="not accounted for"):
        bk.load_policy(_forge(tmp_path / "p.bk", state))
    state["state"] = {}
    with pytest.raises(PolicyFileError, match="empty"):
        bk.load_policy(_forge(tmp_path / "q.bk", state))


def test_save_refuses_a_state_load_would_refuse(tmp_path):
    policy = _played()
    policy.t = -1
    with pytest.raises(bk.errors.UnsavablePolicyError, match=r"state\['t'\]"):
        bk.save_policy(policy, tmp_path / "p.bk")
    assert not (tmp_path / "p.bk").exists()


# --- item 4: policies that did not come back ----------------------------------------


def test_linucb_hybrid_with_its_defaults_saves_and_loads(tmp_path):
    """n_shared = 0 gives (K, d, 0) stacks, which the loader could not reshape.

    (That it then continues bit for bit is the contract suite's ``save_restore`` on
    ``linucb-hybrid[defaults]``.)
    """
    policy = bk.make_policy("linucb-hybrid")
    bk.simulate(policy, bk.make_env("linear"), 10, 0)
    bk.save_policy(policy, tmp_path / "h.bk")
    restored = bk.load_policy(tmp_path / "h.bk", expect="linucb-hybrid")
    assert restored.state_dict()["state"]["B"].shape == (restored.n_arms, restored.d, 0)
    assert restored.t == 10


def test_neural_ucb_continues_identically_after_60_rounds():
    """The hand-written loop of the report: logistic, d = 6, K = 5, 60 rounds then 40."""

    def run(save_at: int | None, tmp: Path) -> list[int]:
        env = bk.make_env("logistic", d=6, n_arms=5)
        env.reset(0)
        policy = bk.make_policy("neural-ucb", seed=0)
        actions = []
        for t in range(100):
            if t == save_at:
                bk.save_policy(policy, tmp / "n.bk")
                policy = bk.load_policy(tmp / "n.bk", expect="neural-ucb")
            ctx = env.context()
            action = policy.act(ctx)
            policy.update(ctx, action, env.step(action).feedback)
            actions.append(action)
        return actions

    with tempfile.TemporaryDirectory() as tmp:
        assert run(60, Path(tmp)) == run(None, Path(tmp))


# --- hypothesis: random forgeries fail cleanly or load as written -------------------

_LEAF_POLICIES = ("linucb", "ucb1", "glm-ts", "linucb-per-arm", "rs-oful")
_SAVED = {name: _played(name).state_dict() for name in _LEAF_POLICIES}


def _array_leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _array_leaves(v, (*path, k))]
    return [path] if isinstance(tree, np.ndarray) else []


_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-(2**40), 2**40),
)
_forged_arrays = st.tuples(
    st.lists(st.integers(0, 5), min_size=0, max_size=3),
    st.sampled_from(["<f8", "<i8", "<c16", "|b1", "<f4"]),
    _values,
).map(lambda t: np.full(tuple(t[0]), t[2] if t[1] != "|b1" else 1).astype(t[1]))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    name=st.sampled_from(_LEAF_POLICIES),
    pick=st.integers(0, 10**6),
    value=_forged_arrays,
    counter=st.sampled_from([None, "t", "n_updates", "d", "horizon"]),
    number=st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.none()),
)
def test_random_forgeries_are_refused_cleanly_or_load_as_written(
    tmp_path_factory, name, pick, value, counter, number
):
    """Any forged leaf: a PolicyFileError naming the file, or a policy that acts."""
    forged = copy.deepcopy(_SAVED[name])
    leaves = _array_leaves(forged["state"])
    _set(("state", *leaves[pick % len(leaves)]), value)(forged)
    if counter is not None:
        forged[counter] = number
    file = _forge(tmp_path_factory.mktemp("f") / "p.bk", forged)
    try:
        policy = bk.load_policy(file)
    except PolicyFileError as exc:
        assert exc.path == file
        return
    ctx = bk.Context(arms=np.eye(4, policy.d or 3))
    policy.update(ctx, policy.act(ctx), 0.5)


class _KeepsWhatItIsGiven(bk.ContextualPolicy):
    """A user policy whose loader checks nothing: the file format still refuses NaN."""

    def _setup(self, ctx):
        self.level = np.zeros(1)

    def _act(self, ctx):
        return 0

    def _update(self, ctx, action, feedback):
        self.level = self.level + feedback

    def _state(self):
        return {"level": self.level}

    def _load_state(self, state):
        self.level = np.array(state["level"])


def test_save_refuses_nan_in_a_state_that_load_would_refuse(tmp_path):
    registry = bk.core.Registry("policy")
    registry.register("keeps")(_KeepsWhatItIsGiven)
    policy = _KeepsWhatItIsGiven()
    policy.update(bk.Context(arms=np.eye(2)), 0, 1.0)
    bk.save_policy(policy, tmp_path / "ok.bk", registry)
    assert bk.load_policy(tmp_path / "ok.bk", registry=registry).level[0] == 1.0
    policy.level = np.array([np.nan])
    with pytest.raises(bk.errors.UnsavablePolicyError, match="NaN"):
        bk.save_policy(policy, tmp_path / "nan.bk", registry)
    assert not (tmp_path / "nan.bk").exists()
