"""``python -m pytest_embedbench.cli``: the ``embedbench`` command."""

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
