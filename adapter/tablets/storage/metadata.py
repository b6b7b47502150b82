"""Changes to a table's properties and comments: a pure function from one ``Metadata`` to the
next, committed by ``TabletTable.alter_metadata`` as a version of its own (no data changes),
with Delta's meaning:

- ``set_properties`` adds or replaces keys, ``unset_properties`` removes keys (a key the table
  does not have is no error, as in Spark 4);
- ``comment`` replaces the table's comment, ``clear_comment`` removes it;
- ``column_comments`` replaces a column's comment (``None`` removes it); columns are found by
  name without regard to case, as Spark resolves them, and keep the name the table gives them.

>>> m = Metadata("id", (("Id", "bigint", True),))
>>> MetadataChange(column_comments=(("id", "the key"),)).apply(m).column_comments
(('Id', 'the key'),)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tablets.exceptions import SchemaMismatch
from tablets.storage.actions import Metadata
from tablets.storage.properties import check_properties

# properties the store keeps elsewhere: the key is fixed at creation (statements rely on it)
KEY_COLUMNS = "key_columns"


@dataclass(frozen=True)
class MetadataChange:
    set_properties: tuple[tuple[str, str], ...] = ()
    unset_properties: tuple[str, ...] = ()
    comment: str | None = None
    clear_comment: bool = False
    column_comments: tuple[tuple[str, str | None], ...] = ()

    def apply(self, meta: Metadata, where: str = "") -> Metadata:
        """``meta`` changed; ``SchemaMismatch`` for a column the table does not have."""
        check_properties(dict(self.set_properties), meta.column_names, where or "ALTER TABLE SET TBLPROPERTIES")
        props = dict(meta.properties)
        props.update(self.set_properties)
        for key in self.unset_properties:
            props.pop(key, None)
        comment = None if self.clear_comment else (self.comment if self.comment is not None else meta.comment)
        order = {n: i for i, n in enumerate(meta.column_names)}
        by_lower = {n.lower(): n for n in meta.column_names}
        comments = dict(meta.column_comments)
        for name, text in self.column_comments:
            column = name if name in order else by_lower.get(name.lower())
            if column is None:
                raise SchemaMismatch(
                    f"{where or 'COMMENT'}: {name} is not a column of the table (columns: {', '.join(meta.column_names)})",
                    help="Name one of the table's columns.",
                )
            if text is None:
                comments.pop(column, None)
            else:
                comments[column] = text
        return replace(
            meta,
            properties=tuple(sorted(props.items())),
            comment=comment,
            column_comments=tuple(sorted(comments.items(), key=lambda kv: order[kv[0]])),
        )
