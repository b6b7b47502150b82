"""The spec of ``CREATE TABLE ... SHALLOW CLONE <source>`` (read by ``tablets.sql.clone``)."""

from __future__ import annotations

from dataclasses import dataclass

from tablets.spec import AsOf


@dataclass(frozen=True)
class CloneSpec:
    target: str
    source: str
    shallow: bool = True
    replace: bool = False
    if_not_exists: bool = False
    as_of: AsOf | None = None
    location: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
