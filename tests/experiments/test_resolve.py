"""Resolution: defaults explicit, names checked against the registries, run ids."""

from __future__ import annotations

import pytest
import yaml

from banditkit.core import make_policy
from banditkit.experiments.papers import paper_dir
from banditkit.experiments.reports import override_notes
from banditkit.experiments.resolve import resolve, run_id
from banditkit.experiments.schema import ConfigError
from tests.experiments.helpers import tiny, write_yaml


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


def _sweep_config(**overrides):
    return tiny(
        envs=[
            {"name": "linear", "label": "base", "d": 3, "n_arms": 4},
            {"name": "linear", "label": "wide", "d": 3, "n_arms": 4},
        ],
        policies=[
            {"name": "linucb", "label": "LinUCB"},
            {"name": "eps-greedy", "label": "eps"},
        ],
        **overrides,
    )


def test_env_overrides_set_a_parameter_on_one_environment():
    resolved = resolve(_sweep_config(env_overrides={"wide": {"nu": 3.0}}))
    params = {(c.env.label, c.policy.label): c.params for c in resolved.cells}
    assert params[("base", "LinUCB")]["nu"] == 1.0
    assert params[("wide", "LinUCB")]["nu"] == 3.0
    # eps-greedy has no nu: it keeps its parameters, so its runs are shared.
    assert params[("wide", "eps")] == params[("base", "eps")]
    assert len({r.id for r in resolved.runs()}) == 3 * 2
    again = resolve(yaml.safe_load(resolved.to_yaml()))
    assert [r.id for r in again.runs()] == [r.id for r in resolved.runs()]
    with pytest.raises(ConfigError, match=r"env_overrides\.wide\.width: no policy"):
        resolve(_sweep_config(env_overrides={"wide": {"width": 50}}))
    with pytest.raises(ConfigError, match=r"env_overrides\.wid: no environment"):
        resolve(_sweep_config(env_overrides={"wid": {"nu": 3.0}}))
    with pytest.raises(ConfigError, match=r"env_overrides\.wide\.LinUCB"):
        resolve(_sweep_config(env_overrides={"wide": {"nu": -1.0}}))


def _cells(resolved):
    return {(c.env.label, c.policy.label): c.params for c in resolved.cells}


def _shared_config(**overrides):
    """LinUCB and LinTS share `nu` and `lam`; eps-greedy shares `lam` only."""
    policies = [
        {"name": "linucb", "label": "LinUCB"},
        {"name": "lints", "label": "LinTS"},
        {"name": "eps-greedy", "label": "eps"},
    ]
    return {**_sweep_config(**overrides), "policies": policies}


@pytest.mark.parametrize("figure", ["fig6", "fig7"])
def test_shipped_mnl_overrides_reach_only_the_policies_they_are_for(figure):
    """The misspecified cells of Figs. 6 and 7 widen ONL-MNL and eps-greedy-MNL and set
    ONL-MNL's scales; OFU-MNL+ also has a `beta_scale` and must keep its own (it once got
    ONL-MNL's 1e-4, an almost greedy OFU-MNL+)."""
    resolved = resolve(paper_dir("mnl") / f"{figure}.yaml")
    default = make_policy("ofu-mnl-plus").get_params()["beta_scale"]
    ofu = [c for c in resolved.cells if c.policy.label == "OFU-MNL+"]
    assert len(ofu) == 8 and {c.params["beta_scale"] for c in ofu} == {default}
    assert default != 1e-4
    for cell in resolved.cells:
        mis = "-mis-" in cell.env.label
        if cell.policy.label == "ONL-MNL":
            assert (cell.params["width"], cell.params["t0"]) == (
                (15, 100) if mis else (3, 50)
            )
            assert cell.params["beta_scale"] == 1e-4
        if cell.policy.label == "eps-greedy-MNL":
            assert cell.params["width"] == (15 if mis else 3)
    # The settings of a policy not overridden are the same in every cell: shared runs.
    for label in ("UCB-MNL", "TS-MNL", "OFU-MNL+"):
        assert (
            len({repr(c.params) for c in resolved.cells if c.policy.label == label})
            == 1
        )


def test_an_override_shared_by_several_policies_must_name_them():
    """The form that leaked ONL-MNL's `beta_scale` into OFU-MNL+ is now an error."""
    config = tiny(
        envs=[{"name": "mnl", "label": "mis", "d": 2, "n_items": 6, "capacity": 2}],
        policies=[
            {"name": "onl-mnl", "label": "ONL-MNL", "width": 3},
            {"name": "ofu-mnl-plus", "label": "OFU-MNL+"},
        ],
        env_overrides={"mis": {"t0": 100, "beta_scale": 0.0001}},
    )
    with pytest.raises(
        ConfigError,
        match=r"env_overrides\.mis\.beta_scale: parameter 'beta_scale' belongs to 2 "
        r"policies of this config \(ONL-MNL, OFU-MNL\+\); name the policies",
    ):
        resolve(config)
    # Named, it reaches ONL-MNL alone; `t0` alone belongs to ONL-MNL and needs no name.
    config["env_overrides"] = {"mis": {"ONL-MNL": {"t0": 100, "beta_scale": 0.0001}}}
    cells = _cells(resolve(config))
    assert cells[("mis", "ONL-MNL")]["beta_scale"] == 0.0001
    assert cells[("mis", "OFU-MNL+")]["beta_scale"] == 1.0
    config["env_overrides"] = {"mis": {"t0": 100}}
    assert _cells(resolve(config))[("mis", "ONL-MNL")]["t0"] == 100


def test_env_overrides_name_policies_by_label_name_or_all():
    by_label = resolve(_shared_config(env_overrides={"wide": {"LinTS": {"nu": 3.0}}}))
    cells = _cells(by_label)
    assert cells[("wide", "LinTS")]["nu"] == 3.0
    assert cells[("wide", "LinUCB")] == cells[("base", "LinUCB")]
    assert by_label.config.env_overrides == {"wide": {"LinTS": {"nu": 3.0}}}
    # A registry name used by one entry names it, as in claims.
    by_name = resolve(_shared_config(env_overrides={"wide": {"lints": {"nu": 3.0}}}))
    assert _cells(by_name) == cells
    # `all`: every policy that has the parameter (eps-greedy has no nu); a named policy's
    # value wins over `all`.
    swept = resolve(
        _shared_config(
            env_overrides={
                "wide": {"LinUCB": {"nu": 5.0}, "all": {"nu": 3.0, "lam": 2.0}}
            }
        )
    )
    cells = _cells(swept)
    assert (cells[("wide", "LinUCB")]["nu"], cells[("wide", "LinTS")]["nu"]) == (
        5.0,
        3.0,
    )
    assert {cells[("wide", p)]["lam"] for p in ("LinUCB", "LinTS", "eps")} == {2.0}
    assert "nu" not in cells[("wide", "eps")]
    # The resolved config names every policy, and resolves to the same runs.
    assert swept.config.env_overrides == {
        "wide": {
            "LinUCB": {"nu": 5.0, "lam": 2.0},
            "LinTS": {"nu": 3.0, "lam": 2.0},
            "eps": {"lam": 2.0},
        }
    }
    again = resolve(yaml.safe_load(swept.to_yaml()))
    assert [r.id for r in again.runs()] == [r.id for r in swept.runs()]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"nu": 3.0},
            r"wide\.nu: parameter 'nu' belongs to 2 policies .*\(LinUCB, LinTS\)",
        ),
        (
            {"LinTS": {"nu": 3.0}, "lam": 1.0},
            r"wide: mixes policies \(LinTS\) with parameters",
        ),
        (
            {"LinTS": 3.0},
            r"wide\.LinTS: expected the parameters of 'LinTS' as a mapping",
        ),
        (
            {"eps": {"nu": 3.0}},
            r"wide\.eps\.nu: policy 'eps' \(eps-greedy\) has no parameter",
        ),
        (
            {"all": {"width": 3}},
            r"wide\.all\.width: no policy of this config has a parameter",
        ),
        ({"LinTSS": {"nu": 3.0}}, r"wide\.LinTSS: no policy .* Did you mean 'LinTS'"),
        ({"all": {"seed": 3}}, r"wide\.all\.seed: no policy"),
    ],
)
def test_env_overrides_errors_name_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        resolve(_shared_config(env_overrides={"wide": overrides}))


def test_a_stored_config_reads_unnamed_overrides_as_they_were_computed():
    """config.yaml written before overrides named their policies: a shared parameter was
    set on every policy that has it, and reading the directory finds those runs."""
    stored = resolve(_shared_config(env_overrides={"wide": {"all": {"nu": 3.0}}}))
    old = yaml.safe_load(stored.to_yaml())
    old["env_overrides"] = {"wide": {"nu": 3.0}}
    with pytest.raises(ConfigError, match="belongs to 2 policies"):
        resolve(old)
    read = resolve(old, envs=stored.envs)
    assert [r.id for r in read.runs()] == [r.id for r in stored.runs()]


def test_tuned_values_reach_only_the_policy_they_name():
    resolved = resolve(
        _shared_config(tuned={"wide": {"LinTS": {"nu": 0.1, "lam": 3.0}}})
    )
    cells = _cells(resolved)
    assert (cells[("wide", "LinTS")]["nu"], cells[("wide", "LinTS")]["lam"]) == (
        0.1,
        3.0,
    )
    assert cells[("wide", "LinUCB")] == cells[("base", "LinUCB")]
    assert cells[("wide", "eps")] == cells[("base", "eps")]


def test_tuned_envs_reads_values_under_another_label(tmp_path):
    tuned = {"tuned": {"linear": {"LinUCB": {"nu": 0.1}}}, "source": {"horizon": 7}}
    write_yaml(tmp_path / "tuned-other.yaml", tuned)
    config = write_yaml(
        tmp_path / "exp.yaml",
        _sweep_config(tuned="tuned-other.yaml", tuned_envs={"wide": "linear"}),
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
    untuned = resolve(_sweep_config(tuned_envs={"wide": "linear"}))
    assert all(
        c.params["nu"] == 1.0 for c in untuned.cells if c.policy.name == "linucb"
    )
    bad = write_yaml(
        tmp_path / "bad.yaml",
        _sweep_config(tuned="tuned-other.yaml", tuned_envs={"wide": "linaer"}),
    )
    with pytest.raises(
        ConfigError, match=r"tuned_envs\.wide: no tuned values.*'linaer'"
    ):
        resolve(bad)
    with pytest.raises(ConfigError, match=r"tuned_envs\.wid: no environment"):
        resolve(_sweep_config(tuned_envs={"wid": "linear"}))


def test_claims_validate_env_and_policy_lists():
    claims = [{"id": "t", "kind": "top-k", "policies": ["linucb"], "k": 1,
               "envs": ["base", "wide"]}]  # fmt: skip
    resolved = resolve(_sweep_config(claims=claims))
    assert resolved.config.claims[0].policies == ["LinUCB"]
    bad_env = [{**claims[0], "envs": ["base", "wid"]}]
    with pytest.raises(ConfigError, match=r"claims\[0\]\.envs: no environment"):
        resolve(_sweep_config(claims=bad_env))
    bad_policy = [{"id": "q", "kind": "equal", "policies": ["LinUCB", "Lin"],
                   "envs": ["base", "wide"]}]  # fmt: skip
    with pytest.raises(ConfigError, match=r"claims\[0\]\.policies: no policy"):
        resolve(_sweep_config(claims=bad_policy))


def test_report_row_notes_show_what_each_environment_sets():
    resolved = resolve(
        _shared_config(
            env_overrides={
                "wide": {"LinUCB": {"nu": 5.0}, "all": {"nu": 3.0, "lam": 2.0}}
            }
        )
    )
    notes = override_notes(resolved.config.to_dict())
    assert notes == {"wide": {"nu (LinUCB)": 5.0, "nu (LinTS)": 3.0, "lam": 2.0}}
    # A config.yaml written before overrides named their policies.
    assert override_notes({"env_overrides": {"wide": {"nu": 3.0}}}) == {
        "wide": {"nu": 3.0}
    }
