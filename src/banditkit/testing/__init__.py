"""Contract suites for policies: check your own policy the way banditkit checks its own.

One suite per family runs over every registered policy of that family (the registry is the
parametrisation, so a new policy is covered without editing a test), and over any user class::

    from banditkit.testing import check_policy
    check_policy(MyPolicy, {"width": 8})          # AssertionError naming the broken contract

or, under pytest, one test per contract::

    from banditkit.testing import PolicyContract

    class TestMyPolicy(PolicyContract):
        policy_class = MyPolicy

    @pytest.mark.parametrize("case", policy_cases("dueling"), ids=str)
    @pytest.mark.parametrize("contract", CONTRACTS)
    def test_contract(case, contract):
        CONTRACTS[contract](case)

The clauses are listed in :mod:`banditkit.testing.contracts`; the scripted environments that
drive them (each family, with ``best_action`` for the oracles) in
:mod:`banditkit.testing.doubles`. Importing this package imports neither pytest nor
hypothesis; the ``fuzz`` contract imports hypothesis when it runs
(``pip install "banditkit[testing]"``), and without it is skipped (``ContractSkipped``, a
``unittest.SkipTest``), with a warning from ``check_policy`` naming that command.
"""

from banditkit.testing import contracts, doubles, harness
from banditkit.testing.contracts import *  # noqa: F403 (the contract clauses)
from banditkit.testing.doubles import *  # noqa: F403 (the scripted environments)
from banditkit.testing.fuzz import check_fuzz
from banditkit.testing.harness import *  # noqa: F403 (cases, play and state checks)

__all__ = ["check_fuzz"]
__all__ += harness.__all__
__all__ += contracts.__all__
__all__ += doubles.__all__
