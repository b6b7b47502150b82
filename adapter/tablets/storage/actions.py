"""Log actions: frozen values, one JSON object per line in a version file.

Each line is ``{"<action name>": {fields}}``. Unknown action names make a reader fail
(``FormatError``) rather than silently skip a change it does not understand.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tablets.exceptions import FormatError

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
    """Schema (ordered (name, Spark SQL type, nullable)), key columns, properties, and the
    table's and its columns' comments (Delta's ``description`` and column ``comment``)."""

    table_id: str
    schema: tuple[tuple[str, str, bool], ...]
    key_columns: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    created_ms: int = 0
    comment: str | None = None
    column_comments: tuple[tuple[str, str], ...] = ()  # (column, comment), in schema order

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c[0] for c in self.schema)

    def property(self, key: str, default: str | None = None) -> str | None:
        return dict(self.properties).get(key, default)

    def column_comment(self, name: str) -> str | None:
        return dict(self.column_comments).get(name)

    def with_schema(self, schema: tuple[tuple[str, str, bool], ...]) -> Metadata:
        """This metadata with ``schema``: key columns and comments of columns it no longer
        has are dropped; everything else stays."""
        names = {c[0] for c in schema}
        return replace(
            self,
            schema=schema,
            key_columns=tuple(k for k in self.key_columns if k in names),
            column_comments=tuple((n, c) for n, c in self.column_comments if n in names),
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
                schema=tuple((n, t, bool(nl)) for n, t, nl in body["schema"]),
                key_columns=tuple(body.get("key_columns", ())),
                properties=tuple((k, v) for k, v in body.get("properties", ())),
                created_ms=body.get("created_ms", 0),
                comment=body.get("comment"),
                column_comments=tuple((n, c) for n, c in body.get("column_comments", ())),
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
        raise FormatError(f"log {where}: not UTF-8 text (byte {e.start} is {data[e.start:e.start + 1]!r})") from None
    if not text.endswith("\n"):
        raise FormatError(f"log {where}: truncated version file (no final newline)")
    return tuple(action_from_json(line, where) for line in text.splitlines() if line)
