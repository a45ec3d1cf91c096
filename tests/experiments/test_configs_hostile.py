"""Hostile configs: every one is refused with one line and exit 2, quickly, writing nothing
outside ``--out``; names that become files are ids (docs/reliability.md, Configs)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from banditkit.cli import app
from banditkit.experiments.config.errors import ConfigError
from banditkit.experiments.config.load import load_config
from banditkit.experiments.config.names import ID_PATTERN, file_stem
from tests.experiments.helpers import HOSTILE, tiny

runner = CliRunner()


def small(**overrides: Any) -> dict[str, Any]:
    """One environment, one cheap policy, one seed, 10 rounds."""
    base: dict[str, Any] = {
        "horizon": 10,
        "seeds": 1,
        "envs": [{"name": "linear", "d": 3, "n_arms": 3}],
        "policies": [{"name": "random"}],
    }
    return tiny(**{**base, **overrides})


def run_text(tmp_path: Path, text: str | bytes) -> tuple[Any, Path]:
    """``banditkit run`` on a config file of ``text`` into ``tmp_path/out``."""
    config = tmp_path / "c.yaml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    out = tmp_path / "out"
    started = time.monotonic()
    result = runner.invoke(
        app,
        ["run", str(config), "--out", str(out), "--backend", "serial"],
        catch_exceptions=False,
        env={"BANDITKIT_MAX_MEMORY": "4G"},
    )
    assert time.monotonic() - started < 20, "a config must be refused quickly"
    return result, out


def assert_refused(result: Any, out: Path, *words: str) -> None:
    """Exit 2, one line starting ``error:``, the ``words`` in it, nothing written."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()


def dump(cfg: dict[str, Any]) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)


# --- numbers, aliases, nesting, bytes: refused at the door ---------------------------


@pytest.mark.parametrize("literal", ["1e5000", "1e999999", "1e99999999", "-1e99999999"])
def test_huge_exponents_are_refused_before_conversion(tmp_path, literal):
    text = dump(small()).replace("horizon: 10", f"horizon: {literal}")
    result, out = run_text(tmp_path, text)
    assert_refused(result, out, "c.yaml")


def test_an_alias_bomb_in_a_parameter_value_is_refused(tmp_path):
    bomb = "\n".join(
        [
            "a0: &a0 [x, x, x, x, x, x, x, x, x, x]",
            *(
                f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1},"
                f" *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
                for i in range(1, 9)
            ),
        ]
    )
    text = bomb + "\n" + dump(small(policies=[{"name": "linucb", "nu": "BOMB"}]))
    result, out = run_text(tmp_path, text.replace("nu: BOMB", "nu: *a8"))
    assert_refused(result, out, "c.yaml")


@pytest.mark.parametrize(
    "text",
    [
        b"name: \xff\n",
        ("name: x\nhorizon: 10\nextra: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
        b"name: x\n" + b"y" * (20 * 2**20),
    ],
    ids=["bad-utf8", "nesting-5000", "20-MiB"],
)
def test_undecodable_deep_or_huge_files_are_refused(tmp_path, text):
    result, out = run_text(tmp_path, text)
    assert_refused(result, out, "c.yaml")


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ({"name": "neural-ucb", "width": 10**9}, ["width=1,000,000,000", "policy"]),
        ({"name": "neural-es", "width": 10**5, "m": 10**4}, ["m=10,000"]),
        ({"name": "neural-ucb", "width": 10**4, "gram": "full"}, ["width=10,000"]),
    ],
    ids=["width", "ensemble", "full-gram"],
)
def test_policy_sizes_count_in_the_size_check(tmp_path, policy, words):
    result, out = run_text(tmp_path, dump(small(policies=[policy])))
    assert_refused(result, out, "needs an estimated", "more than the limit", *words)


def test_a_history_of_a_long_horizon_counts_in_the_size_check(tmp_path):
    """10^8 rounds of d = 100 features: a history of 80 GB, refused before any round."""
    env = {"name": "linear", "d": 100, "n_arms": 3}
    cfg = small(horizon=10**8, envs=[env], policies=[{"name": "linucb"}])
    result, out = run_text(tmp_path, dump(cfg))
    assert_refused(result, out, "needs an estimated", "policy linucb")


# --- names that become files ----------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "a\nb"}, "name"),
        ({"name": "x" * 501}, "name"),
        ({"figure": "../../escape"}, "figure"),
        ({"figure": "/tmp/escape"}, "figure"),
        ({"figure": ".."}, "figure"),
        ({"figure": "fig\n"}, "figure"),
        ({"policies": [{"name": "random", "label": "a\rb"}]}, "label"),
        ({"layout": {"name": "../../escape"}}, "layout"),
    ],
    ids=[
        "newline-name",
        "long-name",
        "dotdot-figure",
        "absolute-figure",
        "parent-figure",
        "trailing-newline-figure",
        "control-label",
        "dotdot-layout",
    ],
)
def test_names_that_would_leave_out_are_refused(tmp_path, change, field):
    result, out = run_text(tmp_path, dump(small(**change)))
    assert_refused(result, out, field)


@pytest.mark.parametrize("name", ["../../escape", "/tmp/abs", "..", "a/b/../../../c"])
def test_a_free_text_name_writes_only_under_out(tmp_path, name):
    """The experiment's name is shown, not a path: its default figure id is an id."""
    cfg = small(name=name, layout={"panels": [{"metric": "regret"}]})
    result, out = run_text(tmp_path, dump(cfg))
    assert result.exit_code == 0, result.output
    written = {p.resolve() for p in tmp_path.rglob("*")}
    assert all(p.is_relative_to(out.resolve()) or p.parent == tmp_path for p in written)
    assert {p.name for p in tmp_path.iterdir()} == {"c.yaml", "out"}
    figures = {p.name for p in (out / "figures").iterdir()}
    assert f"{file_stem(name)}.png" in figures


# --- hypothesis ------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8"), min_size=0, max_size=120)


@HOSTILE
@given(name=_text, figure=st.none() | _text, label=_text)
def test_any_name_loads_as_an_id_or_is_a_config_error(name, figure, label):
    cfg = small(name=name, policies=[{"name": "random", "label": label}])
    if figure is not None:
        cfg["figure"] = figure
    try:
        loaded = load_config(cfg)
    except ConfigError as exc:
        assert str(exc).splitlines()[0].strip(), "a config error says what is wrong"
        return
    fid = loaded.figure_id
    assert re.fullmatch(ID_PATTERN, fid), fid
    assert Path(fid).name == fid and fid not in {".", ".."}
    assert not re.search(
        r"[\x00-\x1f\x7f]", loaded.name + (loaded.policies[0].label or "")
    )


_numbers = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.tuples(st.integers(-9, 9), st.integers(-(10**7), 10**7)).map(
        lambda me: f"{me[0]}e{me[1]}"
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from([".inf", "-.inf", ".nan", "0x7fffffffffffffffffff", "1_000_000"]),
)


@HOSTILE
@given(horizon=_numbers, seeds=_numbers, d=_numbers)
def test_any_number_loads_in_range_or_is_a_config_error_quickly(
    tmp_path, horizon, seeds, d
):
    text = (
        f"name: x\nhorizon: {horizon}\nseeds: {seeds}\n"
        f"env: {{name: linear, d: {d}, n_arms: 3}}\npolicies: [{{name: random}}]\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(text)
    started = time.monotonic()
    try:
        cfg = load_config(config)
    except ConfigError as exc:
        assert str(exc).startswith(str(config)), "a config error names the file"
    else:
        assert isinstance(cfg.horizon, int) and cfg.horizon >= 1
    assert time.monotonic() - started < 2.0
