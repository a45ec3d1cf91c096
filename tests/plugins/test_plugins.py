"""Plugins: entry points of an installed distribution, --import errors, name clashes."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml
from typer.testing import CliRunner

import banditkit as bk
from banditkit.cli import app
from banditkit.core import ENVIRONMENTS, POLICIES, ContextualPolicy
from banditkit.core.registry import IMPORTS_VARIABLE, Registry
from banditkit.plugins import PluginError, import_plugins

runner = CliRunner()

PLUGIN_MODULE = """
import numpy as np

from banditkit.core import ContextualPolicy
from banditkit.envs.synthetic import LinearEnv


class FirstArm(ContextualPolicy):
    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)

    def _act(self, ctx):
        return 0

    def _update(self, ctx, action, feedback):
        pass


class ShiftedLinear(LinearEnv):
    pass
"""


def _distribution(site, name, entry_points, module=None):
    """A real installed distribution: NAME-0.1.dist-info with its entry_points.txt."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module is not None:
        (site / f"{name}.py").write_text(module)


@pytest.fixture
def clean_registries(monkeypatch):
    """Entries added by a test are removed; entry points are read again."""
    monkeypatch.delenv(IMPORTS_VARIABLE, raising=False)
    saved = {reg: dict(reg._entries) for reg in (POLICIES, ENVIRONMENTS)}
    for reg in (POLICIES, ENVIRONMENTS):
        monkeypatch.setattr(reg, "_entry_points_loaded", False)
        monkeypatch.setattr(reg, "_broken", {})
    yield
    for reg, entries in saved.items():
        for name in set(reg._entries) - set(entries):
            reg.unregister(name)


def test_entry_points_of_an_installed_distribution_are_usable_by_name(
    tmp_path, monkeypatch, clean_registries
):
    site = tmp_path / "site"
    _distribution(
        site,
        "bkfakeplug",
        """
        [banditkit.policies]
        first-arm = bkfakeplug:FirstArm

        [banditkit.envs]
        shifted-linear = bkfakeplug:ShiftedLinear
        """,
        PLUGIN_MODULE,
    )
    monkeypatch.syspath_prepend(str(site))
    assert "first-arm" in bk.list_policies("contextual")
    assert "shifted-linear" in bk.list_envs()
    policy = bk.make_policy("first-arm", seed=1)
    assert type(policy).__name__ == "FirstArm" and policy.registry_name == "first-arm"
    env = bk.make_env("shifted-linear", d=3, n_arms=4)
    assert bk.simulate(policy, env, 5, seed=0).actions.tolist() == [0] * 5

    config = {
        "name": "ep",
        "horizon": 20,
        "seeds": 1,
        "envs": [{"name": "shifted-linear", "d": 3, "n_arms": 4}],
        "policies": [{"name": "first-arm", "label": "First"}],
    }
    (tmp_path / "ep.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(tmp_path / "ep.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "summary.json").read_text())["results"]
    assert [(r["env"], r["label"]) for r in rows] == [("shifted-linear", "First")]


def test_a_broken_entry_point_is_reported_on_lookup_only(
    tmp_path, monkeypatch, clean_registries
):
    _distribution(
        tmp_path,
        "bkbrokenplug",
        """
        [banditkit.policies]
        broken = bkbrokenplug_missing:Nothing
        linucb = banditkit.policies.baselines.classic:UCB1
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(UserWarning, match=r"'linucb' is already registered by .*LinUCB"):
        assert "linucb" in bk.list_policies()  # the others still load
    assert bk.make_policy("linucb").registry_name == "linucb"
    assert type(bk.make_policy("linucb")).__name__ == "LinUCB"
    with pytest.raises(
        ValueError,
        match=r"entry point 'bkbrokenplug_missing:Nothing'.*"
        r"failed to load: ModuleNotFoundError",
    ):
        bk.make_policy("broken")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("raise RuntimeError('boom')\n", "failed: RuntimeError: boom"),
        ("x = 1\n", "registered no policy or environment"),
    ],
)
def test_bad_imports_exit_2_with_a_clear_message(
    tmp_path, content, message, clean_registries
):
    plugin = tmp_path / "plug.py"
    if content is not None:
        plugin.write_text(content)
    config = tmp_path / "c.yaml"
    config.write_text("{}")
    for command in (
        ["run", str(config), "--out", str(tmp_path / "o")],
        ["tune", str(config), "--out", str(tmp_path / "o")],
        ["plot", str(tmp_path)],
        ["reproduce", "example", "--out", str(tmp_path / "o")],
    ):
        result = runner.invoke(app, [*command, "--import", str(plugin)])
        assert result.exit_code == 2, (command, result.output)
        assert message in result.output and "plug.py" in result.output
    assert not (tmp_path / "o").exists()


def test_an_unknown_module_exits_2(tmp_path, monkeypatch, clean_registries):
    result = runner.invoke(
        app, ["plot", str(tmp_path), "--import", "no_such_module_xyz"]
    )
    assert result.exit_code == 2
    assert "cannot import 'no_such_module_xyz'" in result.output
    # a file in the working directory named without .py: the message says so
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local_plugin_xyz.py").write_text("x = 1\n")
    result = runner.invoke(app, ["plot", ".", "--import", "local_plugin_xyz"])
    assert result.exit_code == 2
    assert "Did you mean the file local_plugin_xyz.py?" in result.output


def test_import_is_repeatable_and_each_is_checked(tmp_path, clean_registries):
    good = tmp_path / "good.py"
    good.write_text(
        "from banditkit.core import POLICIES\n"
        + PLUGIN_MODULE
        + "POLICIES.register('good-first')(FirstArm)\n"
    )
    (tmp_path / "empty.py").write_text("x = 1\n")
    args = ["plot", str(tmp_path), "--import", str(good), "--import"]
    result = runner.invoke(app, [*args, str(tmp_path / "empty.py")])
    assert result.exit_code == 2 and "'" + str(tmp_path / "empty.py") in result.output
    assert "good-first" in POLICIES  # the first one was imported


def test_import_plugins_reports_names_and_passes_them_to_workers(
    tmp_path, monkeypatch, clean_registries
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(
        "from banditkit.core import POLICIES\n"
        + PLUGIN_MODULE
        + "POLICIES.register('mine-first')(FirstArm)\n"
    )
    assert import_plugins(["mine.py"]) == {"mine.py": ["policy 'mine-first'"]}
    # again (as a worker would): the same class, nothing new, no error
    assert import_plugins(["mine.py"]) == {"mine.py": ["policy 'mine-first'"]}
    import os

    assert os.environ[IMPORTS_VARIABLE] == str((tmp_path / "mine.py").resolve())
    with pytest.raises(PluginError, match="import must name"):
        import_plugins([""])


def test_the_environment_variable_loads_plugins_on_a_lookup_miss(
    tmp_path, monkeypatch, clean_registries
):
    plugin = tmp_path / "late.py"
    plugin.write_text(
        "from banditkit.core import POLICIES\n"
        + PLUGIN_MODULE
        + "POLICIES.register('late-first')(FirstArm)\n"
    )
    assert "late-first" not in POLICIES
    monkeypatch.setenv(IMPORTS_VARIABLE, str(plugin))
    listed = runner.invoke(app, ["list", "policies"])
    assert listed.exit_code == 0 and "late-first" in listed.output
    assert bk.make_policy("late-first").act(bk.Context(arms=[[1.0], [2.0]])) == 0


def test_a_bad_environment_variable_entry_names_the_variable(
    tmp_path, monkeypatch, clean_registries
):
    monkeypatch.setenv(IMPORTS_VARIABLE, str(tmp_path / "gone.py"))
    with pytest.raises(
        ImportError, match=r"BANDITKIT_IMPORTS names .*gone.py.*no such"
    ):
        bk.make_policy("not-a-policy")


def test_a_taken_name_is_refused_unless_it_is_the_same_class():
    reg: Registry[type] = Registry("thing")

    class A(ContextualPolicy):
        pass

    reg.register("a")(A)
    reg.register("a")(A)  # the same object again
    Again = type(
        "A",
        (ContextualPolicy,),
        {"__qualname__": A.__qualname__, "__module__": A.__module__},
    )
    reg.register("a")(Again)  # the same class re-imported replaces it
    assert reg.get("a") is Again

    class B(ContextualPolicy):
        pass

    with pytest.raises(
        ValueError,
        match=r"'a' is already registered \(by .*A\); "
        r"choose another name for .*B",
    ):
        reg.register("a")(B)
    with pytest.raises(ValueError, match="non-empty string"):
        reg.register("")
    assert reg.unregister("a") is Again and "a" not in reg
