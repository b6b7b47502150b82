"""Log actions: frozen values, one JSON object per line in a version file.

Each line is ``{"<action name>": {fields}}``. Unknown action names make a reader fail
(``FormatError``) rather than silently skip a change it does not understand.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tablets.exceptions import FormatError
from tablets.storage.columns import ColumnMapping, evolve

# JSON-able column stats value: int, float, str (dates/timestamps as ISO text), bool or None.
StatValue = Any


@dataclass(frozen=True)
class ColumnStats:
    """A column's bounds in one tablet. ``nan_count`` (floating columns only, Iceberg's
    ``nan_value_counts``): Spark orders NaN above every number and joins NaN to NaN, while
    min/max leave it out, so a float column holding NaN has no upper bound (``max`` None)."""

    min: StatValue = None
    max: StatValue = None
    null_count: int = 0
    nan_count: int | None = None

    @staticmethod
    def from_json(body: dict[str, Any]) -> ColumnStats:
        stats = ColumnStats(**body)
        if isinstance(stats.max, float) and stats.nan_count is None:
            return replace(stats, max=None)  # written before NaN was counted: it may hold NaN
        return stats

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        if self.nan_count is None:  # written only for floating columns
            del body["nan_count"]
        return body


@dataclass(frozen=True)
class Metadata:
    """Schema (ordered (name, Spark SQL type, nullable)), key columns, properties, the table's
    and its columns' comments (Delta's ``description`` and column ``comment``), and each
    column's field id and physical name (``tablets.storage.columns``; in a log written before
    them: ids 1..n, physical name = name)."""

    table_id: str
    schema: tuple[tuple[str, str, bool], ...]
    key_columns: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    created_ms: int = 0
    comment: str | None = None
    column_comments: tuple[tuple[str, str], ...] = ()  # (column, comment), in schema order
    column_ids: tuple[int, ...] = ()  # per column, in schema order; () -> 1..n
    physical_names: tuple[str, ...] = ()  # per column, in schema order; () -> the names
    max_column_id: int = 0  # the highest id ever given (never reused); at least every column's
    # (physical name, old type, new type) of each widening of a column's type, oldest first:
    # tablets written before it hold the old type and are read cast (Delta's delta.typeChanges)
    type_changes: tuple[tuple[str, str, str], ...] = ()
    # False: read from a log without ids (1..n given on reading, which later ids may repeat)
    ids_in_log: bool = field(default=True, compare=False, repr=False)
    # False: a Delta table's metadata that no tablets writer has written (not yet adopted)
    owned: bool = field(default=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.schema)
        if not self.column_ids:
            object.__setattr__(self, "column_ids", tuple(range(1, n + 1)))
        if not self.physical_names:
            object.__setattr__(self, "physical_names", self.column_names)
        if len(self.column_ids) != n or len(self.physical_names) != n:
            raise ValueError(
                f"metadata of {n} columns with {len(self.column_ids)} ids and {len(self.physical_names)} physical names"
            )
        object.__setattr__(self, "max_column_id", max(self.max_column_id, *self.column_ids, 0))

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c[0] for c in self.schema)

    @functools.cached_property  # (per instance: a replace() makes a new one)
    def mapping(self) -> ColumnMapping:
        """Names -> physical names and ids: how every reader and writer finds a column in a tablet."""
        return ColumnMapping(self.column_names, self.physical_names, self.column_ids)

    def property(self, key: str, default: str | None = None) -> str | None:
        return dict(self.properties).get(key, default)

    def column_comment(self, name: str) -> str | None:
        return dict(self.column_comments).get(name)

    def with_schema(self, schema: tuple[tuple[str, str, bool], ...]) -> Metadata:
        """This metadata with ``schema``: a column it keeps (by name) keeps its id and physical
        name (and type changes are casts on read); a new one gets a fresh id and physical name,
        so it never reads a dropped column's values; key columns and comments of columns it no
        longer has are dropped; everything else stays."""
        names = [c[0] for c in schema]
        physical, ids, top = evolve(self.column_names, self.physical_names, self.column_ids, self.max_column_id, names)
        return replace(
            self,
            schema=tuple(schema),
            column_ids=ids,
            physical_names=physical,
            max_column_id=top,
            key_columns=tuple(k for k in self.key_columns if k in names),
            column_comments=tuple((n, c) for n, c in self.column_comments if n in names),
            type_changes=tuple(c for c in self.type_changes if c[0] in physical),
        )

    def widened(self, column: str, new_type: str) -> Metadata:
        """Column ``column``'s type widened to ``new_type`` (same id and physical name: the
        tablets keep their Parquet type and are read cast); the change is recorded."""
        i = self.column_names.index(column)
        name, old, nullable = self.schema[i]
        schema = (*self.schema[:i], (name, new_type, nullable), *self.schema[i + 1 :])
        return replace(self, schema=schema, type_changes=(*self.type_changes, (self.physical_names[i], old, new_type)))

    def with_columns_of(self, other: Metadata) -> Metadata:
        """This metadata with ``other``'s columns as they were (names, types, ids, physical
        names: RESTORE), comments of columns it no longer has dropped, and those columns out of
        the key and of ``cluster_by`` (dropped when none is left); the max id stays this one's
        if higher, so a column added later still gets an id never given."""
        names = set(other.column_names)
        lower = {n.lower() for n in names}
        props = []
        for k, v in self.properties:
            if k.lower() == "cluster_by":
                v = ",".join(c for c in v.split(",") if c.strip().lower() in lower)
                if not v:
                    continue
            props.append((k, v))
        ids, top = other.column_ids, max(self.max_column_id, other.max_column_id)
        if not other.ids_in_log:
            # its ids were made up on reading (1..n) and may since have been given to other
            # columns: a column this metadata has (same physical name) keeps its id, the others
            # get fresh ones
            mine = dict(zip(self.physical_names, self.column_ids, strict=True))
            fresh = iter(range(top + 1, top + 1 + len(ids)))
            ids = tuple(mine[p] if p in mine else next(fresh) for p in other.physical_names)
            top = max(top, *ids)
        return replace(
            self,
            schema=other.schema,
            column_ids=ids,
            physical_names=other.physical_names,
            max_column_id=top,
            type_changes=other.type_changes,
            key_columns=tuple(k for k in self.key_columns if k in names),
            column_comments=tuple((n, c) for n, c in self.column_comments if n in names),
        )

    def renamed(self, old: str, new: str) -> Metadata:
        """Column ``old`` called ``new``: the same id and physical name (no tablet changes);
        key columns and comments follow it."""

        def name(n: str) -> str:
            return new if n == old else n

        return replace(
            self,
            schema=tuple((name(n), t, nl) for n, t, nl in self.schema),
            key_columns=tuple(name(k) for k in self.key_columns),
            column_comments=tuple((name(n), c) for n, c in self.column_comments),
        )


@dataclass(frozen=True)
class AddTablet:
    tablet_id: str
    path: str  # relative to the table root
    rows: int
    bytes: int
    stats: tuple[tuple[str, ColumnStats], ...] = ()
    txid: str = ""

    def column_stats(self, name: str) -> ColumnStats | None:
        for n, s in self.stats:
            if n == name:
                return s
        return None

    def named(self, mapping: ColumnMapping) -> AddTablet:
        """This add with its statistics keyed by column name, not physical name
        (``ColumnMapping.logical_stats``)."""
        stats = mapping.logical_stats(self.stats)
        return self if stats is self.stats else replace(self, stats=stats)


@dataclass(frozen=True)
class RemoveTablet:
    tablet_id: str


@dataclass(frozen=True)
class SetDV:
    """The tablet's deletion vector from this version on (replaces the previous one)."""

    tablet_id: str
    path: str  # relative to the table root
    cardinality: int
    size: int
    checksum: str


@dataclass(frozen=True)
class CommitInfo:
    operation: str
    txid: str
    timestamp_ms: int
    read_version: int  # -1 for the creating commit
    parameters: tuple[tuple[str, str], ...] = ()
    metrics: tuple[tuple[str, float], ...] = field(default=())
    # the table's state after this commit ((name, value) pairs: tablets, dvs, rows, live_rows,
    # digest, metadata_version): what proves a checkpoint or a replay (docs/FORMAT.md); absent
    # in commits written before it was recorded
    state: tuple[tuple[str, Any], ...] = ()

    def metrics_dict(self) -> dict[str, float]:
        return dict(self.metrics)


Action = Metadata | AddTablet | RemoveTablet | SetDV | CommitInfo

_NAMES: dict[type, str] = {
    Metadata: "metadata",
    AddTablet: "add_tablet",
    RemoveTablet: "remove_tablet",
    SetDV: "set_dv",
    CommitInfo: "commit_info",
}
_TYPES = {v: k for k, v in _NAMES.items()}


def action_to_json(action: Action) -> str:
    body = asdict(action)
    if isinstance(action, AddTablet):
        body["stats"] = [(n, st.to_json()) for n, st in action.stats]
    if isinstance(action, Metadata):  # written only when set: older logs and readers stay as they were
        if action.comment is None:
            del body["comment"]
        if not action.column_comments:
            del body["column_comments"]
        if not action.type_changes:
            del body["type_changes"]
        # a column's physical name sits in its schema entry, as a 4th element, only where it is
        # not the name: a reader from before column mapping then fails on the entry (malformed
        # metadata) instead of reading another column's values by name
        del body["physical_names"], body["ids_in_log"], body["owned"]
        body["schema"] = [
            [n, t, nl] if p == n else [n, t, nl, p]
            for (n, t, nl), p in zip(action.schema, action.physical_names, strict=True)
        ]
    if isinstance(action, CommitInfo) and not action.state:
        del body["state"]
    return json.dumps({_NAMES[type(action)]: body}, separators=(",", ":"), sort_keys=True)


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def action_from_json(line: str, where: str = "") -> Action:
    try:
        obj = json.loads(line)
        ((name, body),) = obj.items()
        cls = _TYPES[name]
    except (ValueError, KeyError, AttributeError) as e:
        raise FormatError(f"log {where}: unreadable action line {line[:80]!r} ({e})") from e
    try:
        if cls is AddTablet:
            stats = tuple((n, ColumnStats.from_json(s)) for n, s in body.get("stats", ()))
            return AddTablet(**{**body, "stats": stats})
        if cls is Metadata:
            return Metadata(
                table_id=body["table_id"],
                schema=tuple((n, t, bool(nl)) for n, t, nl, *_ in body["schema"]),
                physical_names=tuple(p[0] if p else n for n, _, _, *p in body["schema"]),
                column_ids=tuple(int(i) for i in body.get("column_ids", ())),
                ids_in_log="column_ids" in body,
                max_column_id=int(body.get("max_column_id", 0)),
                key_columns=tuple(body.get("key_columns", ())),
                properties=tuple((k, v) for k, v in body.get("properties", ())),
                created_ms=body.get("created_ms", 0),
                comment=body.get("comment"),
                column_comments=tuple((n, c) for n, c in body.get("column_comments", ())),
                type_changes=tuple((p, a, b) for p, a, b in body.get("type_changes", ())),
            )
        return cls(**{k: _tuples(v) for k, v in body.items()})
    except (TypeError, ValueError, KeyError) as e:
        raise FormatError(f"log {where}: malformed {name} action ({e})") from e


def encode_actions(actions: list[Action] | tuple[Action, ...]) -> bytes:
    return ("\n".join(action_to_json(a) for a in actions) + "\n").encode()


def decode_actions(data: bytes, where: str = "") -> tuple[Action, ...]:
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise FormatError(f"log {where}: not UTF-8 text (byte {e.start} is {data[e.start : e.start + 1]!r})") from None
    if not text.endswith("\n"):
        raise FormatError(f"log {where}: truncated version file (no final newline)")
    return tuple(action_from_json(line, where) for line in text.splitlines() if line)
