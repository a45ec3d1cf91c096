"""Hostile policy files: forged with a recomputed digest, oversized, bombs, odd dtypes.

A forger can recompute the digest (it is no signature), so every case here writes a file
that passes the digest check: :func:`_forge` builds the ``.npz`` from scratch (skeleton,
arrays, header) with its own SHA-256, independently of ``save_policy``. What stops such a
file is what ``load_policy`` checks after the digest: the allow-lists, the sizes and
dtypes, and the state the policy declares.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

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
