"""What a statement tells the commit about conflicts: whether its source reads the target
(``reads_target``: then it depends on every row) and whether tablets a concurrent commit
appended hold a row it would have matched (``appends_match``, asked at commit time)."""

from __future__ import annotations

import re
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tablets.engine.names import (
    TID,
)
from tablets.engine.pairs_sql import classified_pairs
from tablets.engine.run import Run
from tablets.spark import catalog
from tablets.spark.backend import backend
from tablets.spark.native import MARKER as NATIVE_MARKER
from tablets.storage import (
    TabletState,
)
from tablets.storage.actions import AddTablet
from tablets.storage.fileio import normalize

_RELATION = re.compile(r"RelationV2\[[^\]]*\] (\S+)")


_NATIVE = re.compile(r"SubqueryAlias " + NATIVE_MARKER + r"(tablets_[0-9a-f]{12})\b")


def reads_target(run: Run, source: DataFrame) -> bool:
    """Whether the source may read the target table (dbt's ``where ts > (select max(ts) from
    {{ this }})``): its rows then depend on every row of the target. Told from the relations of
    the source's analyzed plan; a relation read by path, or a plan that cannot be had, counts."""

    try:
        text = backend(source).plan_text(source)
        if text is None:
            return True
        for provider in set(_NATIVE.findall(text)):  # a read the native-read rule replaced
            root = catalog.root_of_provider(run.spark, provider)
            if root is None or normalize(root) == normalize(run.table.root):
                return True
        for name in set(_RELATION.findall(text)):
            root = catalog.lookup(run.spark, name)
            if root is not None and normalize(root) == normalize(run.table.root):
                return True
            if root is None and (name == "tablets" or name.startswith(catalog.PROVIDER_PREFIX)):
                return True  # a tablet table read by path: maybe the target
    except Exception:  # noqa: BLE001 - cannot tell
        return True
    return False


def appends_match(run: Run, source: DataFrame | None, adds: list[AddTablet]) -> bool:
    """Whether the statement would have matched or acted on a row of ``adds`` (tablets that
    concurrent commits appended; asked at commit time): its own join and classification over
    just those tablets, deletion vectors ignored. A failure counts as a match: a conflict,
    never a wrong result."""
    snap = replace(run.snapshot, tablets={a.tablet_id: TabletState(a) for a in adds})
    probe = replace(run, snapshot=snap)
    try:
        rows = (
            classified_pairs(probe, source, [a.tablet_id for a in adds])
            .frame.filter(F.col(TID).isNotNull())
            .limit(1)
            .collect()
        )
    except Exception:  # noqa: BLE001 - cannot tell
        return True
    return bool(rows)
