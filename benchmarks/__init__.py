"""The speed benchmarks that ``banditkit bench`` runs from a checkout (docs/benchmarks.md).

Each public module here (names not starting with "_") defines ``main(quick: bool, out: Path)``
returning a JSON-able dict and writing ``out/result.json`` and ``out/result.md``. They live in
the repository, not in the installed package: ``banditkit bench --out DIR`` finds them when
banditkit runs from a checkout (``make setup`` installs it in editable mode), and the modules
import each other as ``benchmarks.<name>``. Importing this package imports no benchmark (nor
PyTorch).
"""
