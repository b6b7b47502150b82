"""Adopting a Delta table written by another engine (delta-rs, Delta Spark): one version on its
Delta log that makes it a tablet table (``upgrade.restate``, parameter ``from`` = ``delta``):
tablets' metadata (the key it is asked to keep) and every live file restated with tablets'
statistics. Its history stays what it is: Delta version v is the table's version v, read by
``delta_codec`` like any other writer's versions.

Before anything is written the whole log is read (``log.load_snapshot_delta``): a table using a
feature tablets does not maintain (partition columns, change data feed, row tracking, CHECK
constraints that do not parse, generated or identity columns, append-only, column mapping by
id, an unknown reader or writer feature...) is refused with a ``FormatError`` naming the
feature, and nothing is written. Data files stay where they are (tablet id = the file name
without ``.parquet``).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from tablets.exceptions import KeyViolation, SchemaMismatch
from tablets.storage import log, upgrade
from tablets.storage.delta_log import delta_dir
from tablets.storage.fileio import FileIO
from tablets.storage.snapshot import Snapshot
from tablets.storage.tablet import read_tablet
from tablets.storage.types import schema_to_arrow

_DELTA_FILE = re.compile(r"^(\d{20})\.(json|checkpoint\.parquet)$")


def is_delta_table(io: FileIO, root: str) -> bool:
    return any(_DELTA_FILE.match(f.name) for f in io.list(delta_dir(root)))


def _check_keys(io: FileIO, root: str, snap: Snapshot, keys: tuple[str, ...]) -> None:
    """The key tablets is asked to keep must already hold: no two live rows with one key."""
    missing = [k for k in keys if k not in snap.metadata.column_names]
    if missing:
        raise SchemaMismatch(
            f"key column(s) {missing} are not columns of the Delta table at {root}",
            help=f"Name columns of the table ({', '.join(snap.metadata.column_names)}).",
        )
    schema = schema_to_arrow(snap.metadata.schema)
    parts = [
        read_tablet(io, root, st.add, st.dv, schema, list(keys), mapping=snap.metadata.mapping)
        for st in snap.tablets.values()
    ]
    if not parts:
        return
    counts = pa.concat_tables(parts).group_by(list(keys)).aggregate([([], "count_all")])
    dups = counts.filter(pc.greater(counts.column("count_all"), 1))
    if dups.num_rows:
        raise KeyViolation(
            f"the Delta table at {root} has {dups.num_rows} key value(s) held by several rows "
            f"(e.g. {dups.slice(0, 1).to_pylist()[0]}), so ({', '.join(keys)}) is no key of it",
            help="Remove the duplicates first, or adopt the table without key_columns.",
        )


def adopt(io: FileIO, root: str, key_columns: tuple[str, ...] = ()) -> int:
    """Make the Delta table at ``root`` a tablet table; the version that does. Refuses (nothing
    written) a table using a feature tablets does not maintain, and ``key_columns`` (the key
    tablets keeps from now on) that the rows do not already hold."""
    snap = log.load_snapshot_delta(io, root)
    if key_columns:
        _check_keys(io, root, snap, tuple(key_columns))
    return upgrade.restate(io, root, None, "delta", tuple(key_columns)).version


def adopt_if_delta(io: FileIO, root: str, key_columns: tuple[str, ...] = ()) -> bool:
    """Adopt the Delta table at ``root`` if there is one and no tablet table yet (``CREATE
    TABLE ... LOCATION``, ``tablets.`/path` ``); False if there is none to adopt."""
    if log.has_version(io, root) or not is_delta_table(io, root):
        return False
    adopt(io, root, key_columns)
    return True


__all__ = ["adopt", "adopt_if_delta", "is_delta_table"]
