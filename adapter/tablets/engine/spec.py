"""Moved to ``tablets.spec`` (#27). This name stays only until the branches in flight that import
it are merged; import ``tablets.spec``."""

from tablets.spec import *  # noqa: F403
