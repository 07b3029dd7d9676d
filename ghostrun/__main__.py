"""``python -m ghostrun``: the same as the ``ghostrun`` command."""

from __future__ import annotations

import sys

from ._tools._cli import main

if __name__ == "__main__":
    sys.exit(main())
