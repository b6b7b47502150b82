"""table_changes held to the versions it describes: for generated statement sequences
(support.sqlgen: INSERT, MERGE, UPDATE, DELETE, ON CONFLICT, OPTIMIZE, RESTORE, ADD / DROP
COLUMN, MERGE re-runs), the rows of version v1, minus the deletes and pre-images of
``table_changes(v1 + 1, v2)``, plus its inserts and post-images, are the rows of version v2 (as
multisets, v1 read with v2's columns). Where the table declares its key, each version's change
rows give each key at most one pre-image and one post-image, and only together; a key with a
NULL in it none (NULL keys are distinct); and a statement's version has no more pre-images than
the rows it reported updated.

``TABLETS_CHANGES_CASES=n`` runs n cases (default 6, from seed 0).
"""

import os
import random
from collections import Counter

import pyarrow as pa
import pytest
from support.differential import PlanRun, canon, sessions
from support.sqlgen import make_case
from tablets.exceptions import ChangesUnavailable
from tablets.storage.changes import CHANGE_COLUMNS, changes
from tablets.storage.tablet import read_tablet
from tablets.storage.types import schema_to_arrow

pytestmark = pytest.mark.spark

CASES = int(os.environ.get("TABLETS_CHANGES_CASES", "6"))
STATEMENTS = 12


@pytest.fixture(scope="module")
def db(spark):
    d = sessions(spark)["driver"]
    d.sql("CREATE DATABASE IF NOT EXISTS gen")
    return d


def rows_as_of(table, version, meta):
    """Version ``version``'s live rows read with ``meta``'s columns (as table_changes reads them)."""
    snap = table.snapshot(version)
    schema = schema_to_arrow(meta.schema)
    parts = [
        read_tablet(table.io, table.root, st.add, st.dv, schema, mapping=meta.mapping) for st in snap.tablets.values()
    ]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def apply_changes(before: Counter, feed: pa.Table) -> Counter:
    """``before`` minus the feed's deletes and pre-images, plus its inserts and post-images."""
    names = [c for c in feed.column_names if c not in CHANGE_COLUMNS]
    out = Counter(before)
    for r, kind in enumerate(feed.column("_change_type").to_pylist()):
        (row,) = canon(feed.select(names).slice(r, 1))[1]  # one row, normalised as canon does
        out[row] += -1 if kind in ("delete", "update_preimage") else 1
    return out


def check_keys(feed: pa.Table, keys: list[str]) -> str | None:
    by_version: dict[tuple, Counter] = {}
    for r in feed.select([*keys, "_change_type", "_commit_version"]).to_pylist():
        k = (r["_commit_version"], *(r[c] for c in keys))
        by_version.setdefault(k, Counter())[r["_change_type"]] += 1
    for k, kinds in by_version.items():
        if kinds["update_preimage"] and None in k[1:]:
            return f"version {k[0]} key {k[1:]}: a NULL key paired as an update: {dict(kinds)}"
        if kinds["update_preimage"] != kinds["update_postimage"] or kinds["update_preimage"] > 1:
            return f"version {k[0]} key {k[1:]}: {dict(kinds)}"
        if kinds["update_preimage"] and (kinds["insert"] or kinds["delete"]):
            return f"version {k[0]} key {k[1:]}: {dict(kinds)}"
    return None


def check_updates(feed: pa.Table, updated: dict[int, int]) -> str | None:
    """No version pairs more rows as updates than its statement reported updating."""
    pre = Counter(
        v
        for v, kind in zip(
            feed.column("_commit_version").to_pylist(), feed.column("_change_type").to_pylist(), strict=True
        )
        if kind == "update_preimage"
    )
    for v, n in sorted(pre.items()):
        if v in updated and n > updated[v]:
            return f"version {v}: {n} update pre-images, but its statement updated {updated[v]}"
    return None


def test_changes_take_each_version_to_the_next(db):
    problems = []
    for seed in range(CASES):
        case = make_case(seed, STATEMENTS)
        run = PlanRun(db, case, "driver")
        updated = {}  # version -> the rows its statement reported updated
        for i, step in enumerate(case.steps):
            m = run.run(i, step).metrics
            if m is not None and m.version is not None:
                updated[m.version] = m.rows_updated
        table = db.table_of(run.name)
        latest = table.version
        r = random.Random(seed)
        refused = 0
        pairs = {(v, v + 1) for v in range(latest)} | {(0, latest)}
        pairs |= {tuple(sorted(r.sample(range(latest + 1), 2))) for _ in range(4)} if latest > 1 else set()
        for v1, v2 in sorted(pairs):
            meta = table.snapshot(v2).metadata
            try:
                feed = changes(table, v1 + 1, v2)
            except ChangesUnavailable:  # a type change, or a dropped column back (test_table_changes.py)
                refused += 1
                continue
            before = canon(rows_as_of(table, v1, meta))[1]
            after = canon(rows_as_of(table, v2, meta))[1]
            got = apply_changes(before, feed)
            if got != after:
                problems.append(
                    f"seed {seed}, versions {v1} -> {v2}: {dict(got - after)} too many, {dict(after - got)} missing\n{case.script()}"
                )
            if meta.key_columns:
                bad = check_keys(feed, list(meta.key_columns)) or check_updates(feed, updated)
                if bad:
                    problems.append(f"seed {seed}, versions {v1} -> {v2}: {bad}")
        print(f"seed {seed}: {latest} versions, {len(pairs)} ranges checked, {refused} refused", flush=True)
    assert not problems, "\n\n".join(problems[:5])
