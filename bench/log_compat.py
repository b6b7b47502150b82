"""The log calls the benchmarks make, for this checkout and for the revisions they run beside it
(``--baseline``): the Delta log became the one commit point (docs/FORMAT.md, "One log"), and
its calls take the state before a version where the earlier ones took the version's number."""

from __future__ import annotations

import inspect
import os
from typing import Any

from tablets.storage import log

ONE_LOG = "before" in inspect.signature(log.read_version).parameters


def write_version(io: Any, root: str, version: int, actions: list, before: Any = None) -> bool:
    """Commit ``actions`` as ``version`` on ``before`` (the state of the version before it)."""
    if ONE_LOG:
        return log.write_version(io, root, before, log.apply_version(before, version, actions), actions)
    return log.write_version(io, root, version, actions)


def read_version(io: Any, root: str, version: int, before: Any = None) -> tuple:
    return log.read_version(io, root, version, before) if ONE_LOG else log.read_version(io, root, version)


def checkpoint_file(root: str, version: int) -> str:
    """tablets' own checkpoint of ``version``."""
    if ONE_LOG:
        return log.checkpoint_path(root, version)
    return os.path.join(log.log_dir(root), log.checkpoint_name(version))


def version_file(root: str, version: int) -> str:
    return log.version_path(root, version)
