"""`python -m tools.bench WHAT ...`, from the repository's root (what `nox -s bench -- WHAT ...` runs)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
