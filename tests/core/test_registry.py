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
