"""Resolution: defaults explicit, names checked against the registries, run ids."""

from __future__ import annotations

import pytest
import yaml

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.resolve import resolve
from banditkit.experiments.config.resolved import run_id
from tests.experiments.helpers import sweep_config, tiny, write_yaml


def test_defaults_made_explicit_and_idempotent(tmp_path):
    resolved = resolve(tiny())
    linear = resolved.config.envs[0]
    assert linear.label == "linear"
    assert {"d", "n_arms", "law", "noise_std"} <= set(linear.params)
    linucb = resolved.config.policies[1]
    assert linucb.params == {"nu": 0.5, "lam": 1.0}
    assert resolved.config.seeds == [0, 1]
    again = resolve(yaml.safe_load(resolved.to_yaml()))
    assert again.to_yaml() == resolved.to_yaml()
    assert [r.id for r in again.runs()] == [r.id for r in resolved.runs()]
    assert len(resolved.runs()) == 2 * 3 * 2


def test_run_id_depends_on_what_determines_the_result():
    base = run_id("linear", {"d": 3}, "linucb", {"nu": 1.0}, 0, 50)
    assert base == run_id("linear", {"d": 3}, "linucb", {"nu": 1.0}, 0, 50)
    others = {
        run_id("linear", {"d": 4}, "linucb", {"nu": 1.0}, 0, 50),
        run_id("linear", {"d": 3}, "linucb", {"nu": 2.0}, 0, 50),
        run_id("linear", {"d": 3}, "lints", {"nu": 1.0}, 0, 50),
        run_id("linear", {"d": 3}, "linucb", {"nu": 1.0}, 1, 50),
        run_id("linear", {"d": 3}, "linucb", {"nu": 1.0}, 0, 51),
    }
    assert base not in others and len(others) == 5


def test_labels_do_not_change_run_ids():
    a = resolve(tiny())
    b = resolve(tiny(policies=[{"name": "random", "label": "Uniform"}]))
    assert a.runs()[0].id == b.runs()[0].id


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (
            {"policies": [{"name": "linucbb"}]},
            "policies[0].name",
            "Did you mean 'linucb'",
        ),
        ({"envs": [{"name": "logistc"}]}, "envs[0].name", "Did you mean 'logistic'"),
        (
            {"policies": [{"name": "linucb", "nuu": 1}]},
            "policies[0]",
            "Did you mean 'nu'",
        ),
        ({"policies": [{"name": "linucb", "nu": -1.0}]}, "policies[0]", "nu must be"),
        ({"envs": [{"name": "linear", "d": 0}]}, "envs[0]", "d must be"),
        (
            {"policies": [{"name": "random"}, {"name": "linucb", "label": "random"}]},
            "policies[1]",
            "used twice",
        ),
        ({"grid": {"linucbb": {"nu": [1]}}}, "grid.linucbb", "Did you mean"),
        ({"grid": {"LinUCB": {"nuu": [1]}}}, "grid.LinUCB.nuu", "no parameter"),
        ({"metrics": ["n_update"]}, "metrics", "Did you mean 'n_updates'"),
        (
            {"claims": [{"id": "c", "kind": "sublinear", "policy": "LinUCBB"}]},
            "claims[0].policy",
            "Did you mean 'LinUCB'",
        ),
        (
            {
                "claims": [
                    {"id": "c", "kind": "sublinear", "policy": "LinUCB", "env": "lin"}
                ]
            },
            "claims[0].env",
            "no environment labelled",
        ),
        ({"tuned": "missing.yaml"}, "tuned", "not found"),
    ],
)
def test_unknown_names_and_bad_values(tmp_path, change, field, words):
    path = write_yaml(tmp_path / "exp.yaml", tiny(**change))
    with pytest.raises(ConfigError) as info:
        resolve(path)
    text = str(info.value)
    assert text.startswith(str(path)) and field in text and words in text


def test_tuned_values_apply_per_environment(tmp_path):
    tuned = {
        "tuned": {"linear": {"LinUCB": {"nu": 0.1}}},
        "source": {"tuning_seeds": [10000]},
    }
    write_yaml(tmp_path / "tuned.yaml", tuned)
    path = write_yaml(tmp_path / "exp.yaml", tiny(tuned="tuned.yaml"))
    resolved = resolve(path)
    params = {(c.env.label, c.policy.label): c.params for c in resolved.cells}
    assert params[("linear", "LinUCB")]["nu"] == 0.1
    assert params[("logistic-h1", "LinUCB")]["nu"] == 0.5
    assert resolved.config.tuned == {"linear": {"LinUCB": {"nu": 0.1}}}
    assert resolved.config.tuned_source[0]["tuning_seeds"] == [10000]
    # The resolved config holds the values inline and resolves to the same runs.
    again = resolve(yaml.safe_load(resolved.to_yaml()))
    assert [r.id for r in again.runs()] == [r.id for r in resolved.runs()]


def test_claims_may_name_policies_by_registry_name():
    resolved = resolve(
        tiny(
            claims=[{"id": "c", "kind": "below", "policy": "linucb", "other": "random"}]
        )
    )
    claim = resolved.config.claims[0]
    assert (claim.policy, claim.other) == ("LinUCB", "Random")


def test_tuned_envs_reads_values_under_another_label(tmp_path):
    tuned = {"tuned": {"linear": {"LinUCB": {"nu": 0.1}}}, "source": {"horizon": 7}}
    write_yaml(tmp_path / "tuned-other.yaml", tuned)
    config = write_yaml(
        tmp_path / "exp.yaml",
        sweep_config(tuned="tuned-other.yaml", tuned_envs={"wide": "linear"}),
    )
    resolved = resolve(config)
    params = {(c.env.label, c.policy.label): c.params for c in resolved.cells}
    assert params[("wide", "LinUCB")]["nu"] == 0.1
    assert params[("base", "LinUCB")]["nu"] == 1.0
    assert resolved.config.tuned == {"wide": {"LinUCB": {"nu": 0.1}}}
    assert resolved.config.tuned_envs == {}
    assert resolved.config.tuned_source[0]["tuned_envs"] == {"wide": "linear"}
    again = resolve(yaml.safe_load(resolved.to_yaml()))
    assert [r.id for r in again.runs()] == [r.id for r in resolved.runs()]
    # Without `tuned:` the mapping has no effect (tuned files not written yet).
    untuned = resolve(sweep_config(tuned_envs={"wide": "linear"}))
    assert all(
        c.params["nu"] == 1.0 for c in untuned.cells if c.policy.name == "linucb"
    )
    bad = write_yaml(
        tmp_path / "bad.yaml",
        sweep_config(tuned="tuned-other.yaml", tuned_envs={"wide": "linaer"}),
    )
    with pytest.raises(
        ConfigError, match=r"tuned_envs\.wide: no tuned values.*'linaer'"
    ):
        resolve(bad)
    with pytest.raises(ConfigError, match=r"tuned_envs\.wid: no environment"):
        resolve(sweep_config(tuned_envs={"wid": "linear"}))


def test_claims_validate_env_and_policy_lists():
    claims = [{"id": "t", "kind": "top-k", "policies": ["linucb"], "k": 1,
               "envs": ["base", "wide"]}]  # fmt: skip
    resolved = resolve(sweep_config(claims=claims))
    assert resolved.config.claims[0].policies == ["LinUCB"]
    bad_env = [{**claims[0], "envs": ["base", "wid"]}]
    with pytest.raises(ConfigError, match=r"claims\[0\]\.envs: no environment"):
        resolve(sweep_config(claims=bad_env))
    bad_policy = [{"id": "q", "kind": "equal", "policies": ["LinUCB", "Lin"],
                   "envs": ["base", "wide"]}]  # fmt: skip
    with pytest.raises(ConfigError, match=r"claims\[0\]\.policies: no policy"):
        resolve(sweep_config(claims=bad_policy))
