"""Config validation: errors name the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import apply_overrides, load_config
from tests.experiments.helpers import tiny, write_yaml


def _error(data: object, tmp_path: Path) -> ConfigError:
    path = write_yaml(tmp_path / "bad.yaml", data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return info.value


def test_valid_config_with_single_env_and_seed_count():
    cfg = load_config(tiny(envs=[], env={"name": "linear"}, seeds=3))
    assert [e.name for e in cfg.envs] == ["linear"]
    assert cfg.seed_list == [0, 1, 2]
    assert cfg.policies[1].params == {"nu": 0.5}
    assert cfg.ci_level == 0.95


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"horizon": None}, "horizon", "required field is missing"),
        ({"horizon": "long"}, "horizon", "valid integer"),
        ({"horizon": 2.5}, "horizon", "valid integer"),
        ({"horizon": -5}, "horizon", "greater than 0"),
        ({"seeds": 0}, "seeds", "a count >= 1"),
        ({"seeds": [1, 1]}, "seeds", "duplicates"),
        ({"ci_level": 1.5}, "ci_level", "less than 1"),
        ({"policies": "random"}, "policies", "valid list"),
        ({"horizn": 3}, "horizn", "Did you mean 'horizon'"),
        (
            {"policies": [{"label": "x"}]},
            "policies[0].name",
            "required field is missing",
        ),
        ({"policies": [{"name": "random", "seed": 3}]}, "policies[0]", "no `seed`"),
        ({"quick": {"horizon": 0}}, "quick.horizon", "greater than 0"),
        (
            {"claims": [{"id": "c", "kind": "below", "policy": "x"}]},
            "claims[0].other",
            "missing",
        ),
        (
            {"claims": [{"id": "c", "kind": "within-band", "polcy": "x"}]},
            "claims[0].polcy",
            "Did you mean 'policy'? Known fields: id, text, quote, where, stricter, env, envs, policy, kind",
        ),
    ],
)
def test_invalid_fields_are_named(tmp_path, change, field, words):
    data = tiny()
    for key, value in change.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    err = _error(data, tmp_path)
    text = str(err)
    assert text.startswith(str(tmp_path / "bad.yaml"))
    assert field in text
    assert words in text


def test_missing_environments_and_top_level_shape(tmp_path):
    data = tiny()
    del data["envs"]
    assert "expected `envs:`" in str(_error(data, tmp_path))
    assert "mapping of config fields" in str(_error([1, 2], tmp_path))


def test_yaml_syntax_error_names_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nhorizon: [1, 2\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: invalid YAML: line \d+"):
        load_config(path)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")


def test_quick_and_overrides():
    cfg = load_config(tiny(horizon=1000, seeds=5))
    quick = apply_overrides(cfg, quick=True)
    assert (quick.horizon, quick.seed_list) == (500, [0, 1, 2])
    cfg = load_config(tiny(quick={"seeds": [7], "horizon": 30}))
    quick = apply_overrides(cfg, quick=True, horizon=20)
    assert (quick.horizon, quick.seed_list) == (20, [7])
    assert apply_overrides(cfg, seeds=3).seed_list == [0, 1, 2]
    with pytest.raises(ConfigError, match="--horizon"):
        apply_overrides(cfg, horizon=0)


def test_device_and_dtype_overrides_reach_the_policies_that_take_them():
    cfg = load_config(
        tiny(
            policies=[
                {"name": "linucb"},
                {"name": "neural-ucb", "label": "N", "width": 8},
            ]
        )
    )
    both = apply_overrides(cfg, device="cuda:1", dtype="float64")
    linear, neural = both.policies
    assert linear.params == {}  # no device, no dtype: as configured
    assert neural.label == "N"
    assert neural.params == {"width": 8, "device": "cuda:1", "dtype": "float64"}
    assert (
        apply_overrides(cfg, dtype="float32").policies[1].params["dtype"] == "float32"
    )
    assert apply_overrides(cfg) is cfg
    with pytest.raises(ConfigError, match=r"--device.*'gpu'"):
        apply_overrides(cfg, device="gpu")
    with pytest.raises(ConfigError, match=r"--dtype.*'float16'"):
        apply_overrides(cfg, dtype="float16")
