"""The tablet store: immutable Parquet tablets, Roaring deletion vectors, an atomic commit log.

pyarrow + pyroaring + obstore only: importing this package never loads pyspark or dbt.
``fileio`` is the one seam to local disk and object stores. May import only the leaves
(``tablets.exceptions``, ``tablets.settings``, ``tablets.sqltext``) (``tests/unit/test_layers.py``).
"""

from tablets.storage.sink import RowLevelSink
from tablets.storage.snapshot import Snapshot, TabletState
from tablets.storage.table import HistoryEntry, TabletTable
from tablets.storage.transaction import (
    DVFragment,
    Fragment,
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
