"""Config inputs made safe: duplicate YAML keys, exponent numbers, memory bounds, tuned files."""

from __future__ import annotations

import pytest

from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.limits import (
    check_size,
    estimate_memory,
    memory_limit,
)
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.resolve import prepare_experiment, resolve
from banditkit.experiments.config.schema import EnvSpec
from banditkit.experiments.config.yaml_io import read_yaml
from tests.experiments.helpers import tiny, write_yaml


def test_duplicate_keys_are_errors_naming_both_lines(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nenv:\n  name: linear\n  d: 3\n  d: 4\nseeds: 2\n")
    with pytest.raises(
        ConfigError,
        match=r"line 5, column 3: duplicate key 'd' "
        r"\(first given on line 4\)",
    ) as info:
        read_yaml(path)
    assert str(path) in str(info.value)


def test_merge_keys_may_be_overridden(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("base: &b {d: 3, n_arms: 4}\nenv: {<<: *b, d: 5}\n")
    assert read_yaml(path)["env"] == {"d": 5, "n_arms": 4}


def test_exponent_notation_reads_as_numbers(tmp_path):
    """Configs are read by the bounded reader (``core.safe_yaml``, tested there)."""
    path = tmp_path / "c.yaml"
    path.write_text("a: 1e5\nb: 2.5e-3\ne: '1e5'\n")
    assert read_yaml(path) == {"a": 100000, "b": 0.0025, "e": "1e5"}


def test_memory_limit_reads_the_environment(monkeypatch):
    monkeypatch.setenv("BANDITKIT_MAX_MEMORY", "16G")
    assert memory_limit() == 16 * 2**30
    monkeypatch.setenv("BANDITKIT_MAX_MEMORY", "500 MiB")
    assert memory_limit() == 500 * 2**20
    monkeypatch.setenv("BANDITKIT_MAX_MEMORY", "none")
    assert memory_limit() is None
    monkeypatch.setenv("BANDITKIT_MAX_MEMORY", "lots")
    with pytest.raises(ConfigError, match="BANDITKIT_MAX_MEMORY: expected a size"):
        memory_limit()
    monkeypatch.delenv("BANDITKIT_MAX_MEMORY")
    limit = memory_limit()
    assert limit is None or limit > 2**20


def test_estimate_counts_results_and_declared_sizes():
    small = load_config(tiny(envs=[{"name": "linear", "d": 3, "n_arms": 4}]))
    needed, how = estimate_memory(small)
    assert 3 * 2 * 40 * 8 * 8 < needed < 1 << 20
    assert how.startswith("6 runs x 40 rounds x ")
    # d=10**5 makes the policy's d x d matrix 80 GB on its own (n_arms from the default)
    wide = small.model_copy(update={"envs": [EnvSpec(name="linear", d=10**5)]})
    assert estimate_memory(wide)[0] > 8 * 10**10
    assert "n_arms=10, d=100,000" in estimate_memory(wide)[1]


def test_overrides_and_mappings_are_bounded_too(monkeypatch, tmp_path):
    monkeypatch.setenv("BANDITKIT_MAX_MEMORY", "1G")
    path = write_yaml(tmp_path / "c.yaml", tiny())
    with pytest.raises(ConfigError, match=r"needs an estimated .* limit of 1\.0 GiB"):
        prepare_experiment(path, seeds=10**12)
    with pytest.raises(ConfigError, match="needs an estimated"):
        prepare_experiment(path, horizon=10**10)
    with pytest.raises(ConfigError, match="needs an estimated"):
        resolve(tiny(envs=[{"name": "linear", "pool": 10**9}]))
    check_size(load_config(tiny()))  # an ordinary config passes


def test_tuned_file_matching_no_policy_is_an_error(tmp_path):
    (tmp_path / "tuned.yaml").write_text(
        "tuned:\n  linear:\n    Other: {nu: 0.1}\n  elsewhere:\n    LinUCB: {nu: 0.1}\n"
    )
    path = write_yaml(tmp_path / "c.yaml", tiny(tuned="tuned.yaml"))
    with pytest.raises(
        ConfigError,
        match=r"tuned: tuned-parameter file .*tuned\.yaml"
        r"' matches no policy of this config",
    ) as info:
        prepare_experiment(path)
    assert "elsewhere / LinUCB" in str(info.value)
    assert "linear / LinUCB" in str(info.value)
    # One matching entry is enough (a file may hold more than one config uses).
    (tmp_path / "tuned.yaml").write_text(
        "tuned:\n  linear:\n    LinUCB: {nu: 0.1}\n  elsewhere:\n    LinUCB: {nu: 2}\n"
    )
    resolved = prepare_experiment(path)
    assert resolved.config.tuned == {"linear": {"LinUCB": {"nu": 0.1}}}


def test_inline_tuned_mapping_matching_no_policy_is_an_error():
    cfg = tiny(tuned={"linear": {"Nobody": {"nu": 0.1}}})
    with pytest.raises(ConfigError, match="the inline `tuned:` mapping matches no"):
        resolve(cfg)
