"""Shared test set-up: make the source tree importable without an install (the README's
`make test` installs the package editable anyway)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(ROOT, "adapter") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "adapter"))
