"""docs/testing.md: its examples run, and banditkit.testing stays light to import."""

import re
import subprocess
import sys
from pathlib import Path

from banditkit.testing import policy_cases

DOC = Path(__file__).parents[2] / "docs" / "testing.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_user_policy_example_runs_and_passes_the_contract():
    namespace = {"__name__": "docs_example"}
    exec(_blocks()[0], namespace)
    suite = namespace["TestGreedyMean"]()
    tests = [name for name in dir(suite) if name.startswith("test_")]
    assert len(tests) == 9  # eight contracts, then the defaults
    for name in tests:
        getattr(suite, name)()


def test_the_family_parametrisation_example_runs():
    namespace = {"__name__": "docs_example"}
    exec(_blocks()[1], namespace)
    marks = namespace["test_dueling_contract"].pytestmark
    (cases,) = [m.args[1] for m in marks if m.args[0] == "case"]
    assert [str(c) for c in cases] == [str(c) for c in policy_cases("dueling")]
    namespace["test_dueling_contract"](cases[0], "save_restore")


def test_importing_banditkit_testing_imports_neither_pytest_nor_hypothesis():
    code = (
        "import sys, banditkit\n"
        "assert 'banditkit.testing' not in sys.modules\n"
        "import banditkit.testing\n"
        "bad = {'pytest', 'hypothesis'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
