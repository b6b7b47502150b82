"""The tablet store: immutable Parquet tablets, Roaring deletion vectors, an atomic commit log.

pyarrow + pyroaring only: importing this package never loads pyspark or dbt.
"""

from tablets.storage.snapshot import Snapshot, TabletState
from tablets.storage.table import HistoryEntry, TabletTable
from tablets.storage.transaction import (
    DVFragment,
    Fragment,
    RowLevelSink,
    TabletFragment,
    WriteHandle,
    discard,
    fragment_from_json,
    fragment_to_json,
)

__all__ = [
    "DVFragment",
    "Fragment",
    "HistoryEntry",
    "RowLevelSink",
    "Snapshot",
    "TabletFragment",
    "TabletState",
    "TabletTable",
    "WriteHandle",
    "discard",
    "fragment_from_json",
    "fragment_to_json",
]
