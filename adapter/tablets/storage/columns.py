"""Column mapping: every column of a table has a field id and a physical name, the name of its
column inside the tablets (Delta's column mapping, mode ``name``; Iceberg's field ids).

Why: with columns matched by name, a column dropped and added back under its old name read the
old column's values from the tablets written before, and a rename would have had to
rewrite every tablet. Now:

- the columns of a new table, and every column of a table whose log has no ids, have physical
  name == name (nothing to rewrite; ids 1..n in schema order);
- a column added later gets the next id and a fresh physical name, ``col-<uuid>``, that no
  tablet of the table has used, so older tablets lack it and read it as NULL;
- a rename changes the name only, a drop forgets the column: no tablet is rewritten.

Every reader and writer of tablet columns goes through ``ColumnMapping`` (``Metadata.mapping``):
writers put each column under its physical name (with its id as the Parquet field id), readers
ask for physical names and give the columns their names; the log's tablet statistics are keyed
by physical name (``logical_stats`` for pruning by name).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa

S = TypeVar("S")  # a column's statistics (``actions.ColumnStats``)

FIELD_ID = b"PARQUET:field_id"  # Arrow field metadata that pyarrow writes as the Parquet field id
PHYSICAL_PREFIX = "col-"


def fresh_physical_name() -> str:
    """A physical name no tablet has used (Delta's ``col-<uuid>``)."""
    return f"{PHYSICAL_PREFIX}{uuid.uuid4()}"


@dataclass(frozen=True)
class ColumnMapping:
    """A table's columns at one version: names, physical names and field ids, in schema order.
    Small and picklable (write handles and readers ship it to Spark tasks)."""

    names: tuple[str, ...]
    physical: tuple[str, ...]
    ids: tuple[int, ...]
    _to_physical: dict[str, str] = field(init=False, repr=False, compare=False)
    _to_name: dict[str, str] = field(init=False, repr=False, compare=False)
    # every column's physical name is its name (every table before its first added column):
    # readers then take the paths they took before column mapping
    identity: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_to_physical", dict(zip(self.names, self.physical, strict=True)))
        object.__setattr__(self, "_to_name", dict(zip(self.physical, self.names, strict=True)))
        object.__setattr__(self, "identity", self.names == self.physical)

    def physical_of(self, name: str) -> str:
        """The column's physical name; a name that is no column (``ROW_ID``) stays as it is."""
        return self._to_physical.get(name, name)

    def name_of(self, physical: str) -> str | None:
        """The name of the column a tablet keeps as ``physical``; None: no column of the table."""
        return self._to_name.get(physical)

    def physical_names(self, names: Sequence[str]) -> list[str]:
        return [self._to_physical.get(n, n) for n in names]

    def to_physical(self, data: pa.Table) -> pa.Table:
        """``data`` (columns by name) as a tablet stores it: physical names, field ids."""
        ids = dict(zip(self.names, self.ids, strict=True))
        fields = [
            pa.field(self.physical_of(f.name), f.type, f.nullable, {FIELD_ID: str(ids[f.name]).encode()})
            if f.name in ids
            else f
            for f in data.schema
        ]
        return pa.Table.from_arrays(data.columns, schema=pa.schema(fields))

    def to_names(self, data: pa.Table) -> pa.Table:
        """Columns read from a tablet (physical names) under the table's names."""
        if self.identity:
            return data
        return data.rename_columns([self._to_name.get(n, n) for n in data.column_names])

    def logical_stats(self, stats: tuple[tuple[str, S], ...]) -> tuple[tuple[str, S], ...]:
        """A tablet's statistics (``AddTablet.stats``) keyed by column name (what pruning by a
        query's columns asks for: ``AddTablet.named``): a column the tablet lacks (added after
        it) has no entry, and entries of physical columns the table no longer has (dropped) are
        left out. Hidden columns (``__tablets...``) keep theirs."""
        if self.identity:
            return stats  # every physical name is the column's own name
        return tuple(
            (self._to_name[p], s) if p in self._to_name else (p, s)
            for p, s in stats
            if p in self._to_name or p.startswith("__tablets")
        )


def evolve(
    names: Sequence[str], physical: Sequence[str], ids: Sequence[int], max_id: int, new_names: Sequence[str]
) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    """The physical names, ids and max id of a table whose columns become ``new_names``: a name
    the table has keeps its column (physical name and id), a new one gets the next id and a
    fresh physical name. Ids are never given twice: ``max_id`` only grows."""
    have = {n: (p, i) for n, p, i in zip(names, physical, ids, strict=True)}
    out_physical, out_ids = [], []
    for name in new_names:
        if name in have:
            p, i = have[name]
        else:
            max_id += 1
            p, i = fresh_physical_name(), max_id
        out_physical.append(p)
        out_ids.append(i)
    return tuple(out_physical), tuple(out_ids), max_id
