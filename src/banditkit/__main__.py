"""``python -m banditkit``: the ``banditkit`` command."""

from banditkit.cli import main

if __name__ == "__main__":  # pragma: no branch
    main()
