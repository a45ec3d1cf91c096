"""The learning schedules and the service configuration."""

from __future__ import annotations

import pytest

from banditkit.policies.rare import update_grid
from banditkit.serve import ServeConfigError, load_config
from banditkit.serve.schedule import make_schedule


def due(spec, n=40):
    schedule = make_schedule(spec)
    return [i for i in range(1, n + 1) if schedule.due(i)]


def test_every_n_feedbacks():
    assert due(1, 5) == [1, 2, 3, 4, 5]
    assert due(4, 13) == [4, 8, 12]


def test_explicit_grid_then_its_last_interval_repeats():
    assert due({"grid": [3, 10, 20]}) == [3, 10, 20, 30, 40]
    assert due({"grid": [5]}, 16) == [5, 10, 15]


def test_named_grid_is_the_rare_update_grid():
    ends = update_grid("blce", 10_000)
    schedule = make_schedule({"grid": "blce", "horizon": 10_000})
    learned = [n for n in range(1, 10_001) if schedule.due(n)]
    assert tuple(learned) == ends
    assert len(learned) == 8  # O(log log T) learning steps in T feedbacks


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (0, "update_every must be an integer >= 1"),
        (True, "update_every must be an integer >= 1"),
        ({"grid": [5, 5]}, "increase strictly"),
        ({"grid": []}, "non-empty list"),
        ({"grid": "blce"}, "update_every.horizon must be an integer"),
        ({"grid": "nope", "horizon": 10}, "one of"),
        ({"grid": [3], "horizon": 10}, "named grid only"),
        ({"grid": [3], "every": 2}, "unknown keys"),
    ],
)
def test_bad_schedules_name_update_every(spec, message):
    with pytest.raises(ValueError, match=message):
        make_schedule(spec)


def entry(**kw):
    return {"policies": [{"id": "rec", "name": "linucb", **kw}]}


def test_defaults():
    spec = load_config(entry()).policies[0]
    assert (spec.update_every, spec.snapshot_every, spec.join_window_s) == (
        1,
        10_000,
        3600,
    )
    assert spec.default_feedback is None and spec.token_env is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (entry(name="no-such-policy"), r"policies.0 \('rec'\).*no-such-policy"),
        (entry(params={"nu": -1.0}), r"policies.0 \('rec'\).*nu"),
        (entry(update_every=0), "policies.0.update_every"),
        (entry(snapshot_every=0), "policies.0.snapshot_every"),
        (entry(join_window_s=0), "policies.0.join_window_s"),
        (entry(colour="red"), "policies.0.colour"),
        (entry(id="a b"), "policies.0.id"),
        (entry(token_env="1X"), "policies.0.token_env"),
        (entry(name="blce"), "needs the horizon"),
        ({"policies": [{"id": "a", "name": "linucb"}] * 2}, "unique; repeated: a"),
        ({"policies": []}, "policies"),
        ({"policy": []}, "policy"),
        (entry(name="eps-greedy", default_feedback="x"), "default_feedback"),
        (
            entry(name="nvldb-ucb", default_feedback=2),
            "default_feedback.*dueling feedback must be 1",
        ),
        (
            entry(name="ucb-mnl", horizon=50, default_feedback=0),
            "must be -1 .no purchase",
        ),
        (entry(name="glm-ucb", default_feedback=3.0), "default_feedback"),
    ],
)
def test_bad_configs_name_the_field(config, message):
    with pytest.raises(ServeConfigError, match=message):
        load_config(config)


def test_file_errors(tmp_path):
    with pytest.raises(ServeConfigError, match=r"missing\.yaml: file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("policies: [\n")
    with pytest.raises(ServeConfigError, match="invalid YAML: line 2"):
        load_config(bad)
    good = tmp_path / "good.yaml"
    good.write_text("policies:\n  - {id: rec, name: linucb, params: {nu: 0.5}}\n")
    assert load_config(good).policies[0].params == {"nu": 0.5}


def test_tokens_come_from_the_named_variables():
    config = load_config(entry(token_env="REC_TOKEN"))
    assert config.tokens({"REC_TOKEN": "t0k3n"}) == {"rec": "t0k3n"}
    with pytest.raises(ServeConfigError, match="REC_TOKEN is not set") as err:
        config.tokens({})
    assert "t0k3n" not in str(err.value)
