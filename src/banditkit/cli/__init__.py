"""The ``banditkit`` command (docs/architecture.md section 6).

    banditkit run CONFIG.yaml --out DIR [--jobs N] [--backend auto|serial|process|ray]
                                        [--address A] [--seeds N] [--horizon T]
    banditkit reproduce PAPER [--figure ID] [--quick] [--seeds N] [--horizon T] --out DIR
    banditkit tune CONFIG.yaml --out DIR
    banditkit plot DIR
    banditkit list [policies|envs|datasets|papers|metrics]
    banditkit describe NAME
    banditkit datasets [list|verify|path|fetch] [NAME...] [--all] [--mirror URL]
    banditkit bench [--quick] [--only NAME] [--rerun] --out DIR
    banditkit examples [NAME] [--out PATH] [--force]
    banditkit evaluate [LOG] [--target uniform|NAME[:k=v,...]|CONFIG|FILE.npy ...]
    banditkit evaluate --db URL --policy ID [--candidate NAME[:k=v,...] ...]
    banditkit serve CONFIG --db URL [--host H] [--port P]  |  serve export --db URL --policy ID --out F
    banditkit [--debug] --version

Exit status: 0 success; 1 some runs (or benchmarks, or dataset checks) failed, with their
errors recorded; 2 invalid input (any ``banditkit.errors.BanditkitError``: config, option,
unknown name, unwritable ``--out``, a missing dataset), with nothing written and no traceback
(``--debug`` or ``BANDITKIT_DEBUG=1`` shows it); 130 interrupted (finished runs are kept:
re-run to resume). ``reproduce`` exits 0
when claims FAIL (they are results, reported in report.md) unless ``--strict`` is given, in
which case a FAIL gives 3.
"""

from __future__ import annotations

# importing the command modules registers their commands, in this order in --help
from banditkit.cli import experiments  # noqa: F401

# isort: split
from banditkit.cli import catalogue  # noqa: F401

# isort: split
from banditkit.cli import data  # noqa: F401

# isort: split
from banditkit.cli import serve  # noqa: F401
from banditkit.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``banditkit`` console script."""
    app()
