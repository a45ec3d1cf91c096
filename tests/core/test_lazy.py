"""The lazy stand-in imports its module at the first attribute access, and only then."""

from __future__ import annotations

import subprocess
import sys

from banditkit.core.lazy import LazyModule, lazy_import


def test_a_stand_in_imports_on_first_use_only() -> None:
    code = (
        "import sys\n"
        "from banditkit.core.lazy import lazy_import\n"
        "m = lazy_import('fractions')\n"
        "assert 'fractions' not in sys.modules, 'imported too early'\n"
        "assert m.Fraction(1, 2) * 2 == 1\n"
        "assert 'fractions' in sys.modules\n"
        "assert 'Fraction' in vars(m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_imported_module_is_returned_as_is() -> None:
    assert lazy_import("sys") is sys
    assert isinstance(LazyModule("json"), LazyModule)
    assert "json" in repr(LazyModule("json"))
