"""The lazy stand-in imports its module at the first attribute access, and only then."""

from __future__ import annotations

import subprocess
import sys

from banditkit.core.lazy import LazyModule, lazy_import


def test_a_stand_in_imports_on_first_use_only() -> None:
    code = (
        "import sys\n"
        "from banditkit.core.lazy import lazy_import\n"
        "m = lazy_import('colorsys')\n"
        "assert 'colorsys' not in sys.modules, 'imported too early'\n"
        "assert m.rgb_to_hsv(1.0, 0.0, 0.0)[0] == 0.0\n"
        "assert 'colorsys' in sys.modules\n"
        "assert 'hsv_to_rgb' in vars(m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_imported_module_is_returned_as_is() -> None:
    assert lazy_import("sys") is sys
    assert isinstance(LazyModule("json"), LazyModule)
    assert "json" in repr(LazyModule("json"))
