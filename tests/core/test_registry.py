import pytest

import banditkit as bk
from banditkit.core import Registry


def test_unknown_names_suggest_close_matches():
    with pytest.raises(
        ValueError, match=r"unknown policy 'linucbb'. Did you mean 'linucb'"
    ):
        bk.make_policy("linucbb")
    with pytest.raises(ValueError, match=r"unknown environment 'logistc'.*'logistic'"):
        bk.make_env("logistc")


def test_unknown_parameter_suggests():
    with pytest.raises(ValueError, match=r"no parameter 'nuu'. Did you mean 'nu'"):
        bk.make_policy("linucb", nuu=1.0)


def test_lists_and_registration():
    names = bk.list_policies()
    for name in [
        "random",
        "oracle",
        "eps-greedy",
        "linucb",
        "lints",
        "glm-ucb",
        "glm-ts",
    ]:
        assert name in names
    for name in ["linear", "logistic", "classification"]:
        assert name in bk.list_envs()
    assert bk.list_policies("dueling") == [
        n for n in names if bk.core.POLICIES.get(n).family == "dueling"
    ]
    reg: Registry[type] = Registry("thing")

    class A:
        registry_name = ""

    class B:
        pass

    reg.register("a")(A)
    assert A.registry_name == "a" and "a" in reg and len(reg) == 1
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a")(B)


def test_an_unknown_name_suggests_at_most_five_and_says_where_all_are():
    with pytest.raises(ValueError) as info:
        bk.make_policy("linucbx")
    message = str(info.value)
    assert message.count("'") <= 2 * 6  # the name and at most five suggestions
    assert "`banditkit list policies` lists all" in message
    assert "ada-ofu-ecolog" not in message  # no longer every name
    assert len(message) < 200


MODULE_DOC = """A documented module, as banditkit's policy modules are.

References:
    [Doe2020] J. Doe. A paper on
        bandits. 2020.
    [Roe2021] R. Roe. Another. 2021.
"""


class Documented(bk.ContextualPolicy):
    """Documented [Doe2020, Alg. 1]: plays the first arm.

    Symbols: nu = ν (the paper's radius), lam = λ.

    Args:
        nu: Exploration scale, >= 0; zero is greedy.
        lam: Ridge weight, > 0, which
            continues here.
        mode: None (default) resolves to "fast".
        seed: Seed.
    """

    def __init__(
        self, *, nu: float = 1.0, lam: float = 0.5, mode=None, seed: int = 0
    ) -> None:
        super().__init__(seed=seed)
        self.nu, self.lam, self.mode = nu, lam, "fast" if mode is None else mode

    def _act(self, ctx):
        return 0

    def _update(self, ctx, action, feedback):
        pass


class Child(Documented):
    """Child [Roe2021]: the same, undocumented parameters inherited."""

    def __init__(self, *, nu: float = 2.0, extra: int = 3, seed: int = 0) -> None:
        super().__init__(nu=nu, seed=seed)
        self.extra = extra


def test_describe_reads_signature_and_docstrings(monkeypatch):
    import sys

    from banditkit.core.registry import REQUIRED, describe

    monkeypatch.setattr(sys.modules[__name__], "__doc__", MODULE_DOC)
    entry = describe(Documented, "documented", resolve=True)
    assert entry.summary == "Documented [Doe2020, Alg. 1]: plays the first arm."
    assert entry.papers == ("Doe2020",)
    assert entry.references == {"Doe2020": "J. Doe. A paper on bandits. 2020."}
    params = {p.name: p for p in entry.parameters}
    assert list(params) == ["nu", "lam", "mode", "seed"]
    assert (params["nu"].default, params["nu"].symbol) == (
        1.0,
        "ν (the paper's radius)",
    )
    assert params["nu"].doc == "Exploration scale, >= 0; zero is greedy."
    assert params["lam"].doc == "Ridge weight, > 0, which continues here."
    assert (params["mode"].default, params["mode"].resolved) == (None, "fast")
    child = {p.name: p for p in describe(Child, "child").parameters}
    assert child["nu"].default == 2.0 and child["nu"].doc.startswith("Exploration")
    assert child["extra"].doc == "" and child["extra"].resolved == 3
    assert describe(lambda *, k: k, "f").parameters[0].default is REQUIRED


def test_every_builtin_policy_is_described():
    for name in bk.list_policies():
        entry = bk.core.POLICIES.describe(name)
        assert entry.summary and entry.family, name
        assert [p.name for p in entry.parameters][-1] == "seed", name
