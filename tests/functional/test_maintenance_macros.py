"""The maintenance macros in real dbt runs: a merge_tablets model whose post-hooks optimize and
vacuum its table, and ``dbt run-operation`` of tablets_history, tablets_optimize,
tablets_vacuum and tablets_restore, with the table's files and versions checked after each."""

from __future__ import annotations

import os

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

# retention 0: the post-hook's VACUUM deletes what OPTIMIZE left unreferenced at once
KV = """
{{ config(
    materialized='merge_tablets',
    unique_key='id',
    tblproperties={'deleted_file_retention_hours': '0'},
    post_hook=["{{ tablets_optimize(this) }}", "{{ tablets_vacuum(this) }}"] if var('maintain', true) else [],
) }}
{% if var('phase', 1) == 1 %}
select 1 as id, 'a' as v union all select 2 as id, 'b' as v
{% else %}
select 2 as id, 'B' as v union all select 3 as id, 'c' as v
{% endif %}
"""


def logged(out: str, statement: str) -> dict[str, str]:
    """The result row tablets__run_maintenance logged for ``statement``: column -> value."""
    line = next(line for line in out.splitlines() if f"{statement}: " in line)
    return dict(part.split("=", 1) for part in line.split(f"{statement}: ", 1)[1].split(", "))


class TestMaintenanceMacros:
    @pytest.fixture(scope="class")
    def models(self):
        return {"kv.sql": KV}

    def rows(self, project):
        return sorted(tuple(r) for r in project.run_sql(f"select * from {project.test_schema}.kv", fetch="all"))

    def history(self, project):
        rows = project.run_sql(f"describe history {project.test_schema}.kv", fetch="all")
        return [(r[0], r[2]) for r in rows]

    def root(self, project):
        rows = project.run_sql(f"describe extended {project.test_schema}.kv", fetch="all")
        return {r[0]: r[1] for r in rows}["Location"]

    def files(self, project):
        root = self.root(project)
        return sorted(
            os.path.join(sub, f)
            for sub in ("tablets", "dv")
            if os.path.isdir(os.path.join(root, sub))
            for f in os.listdir(os.path.join(root, sub))
        )

    def test_post_hooks_and_run_operations(self, project):
        relation = f"{project.test_schema}.kv"
        run_dbt(["run"])
        assert self.rows(project) == [(1, "a"), (2, "b")]
        assert self.history(project) == [(1, "CREATE TABLE AS SELECT"), (0, "CREATE TABLE")]  # one tablet: no OPTIMIZE

        _, out = run_dbt_and_capture(["run", "--vars", "phase: 2"])
        assert self.rows(project) == [(1, "a"), (2, "B"), (3, "c")]
        # the MERGE deleted a row of the first tablet and wrote a second; OPTIMIZE made them one,
        # and the VACUUM that deleted files recorded its start and end
        assert self.history(project)[:4] == [(5, "VACUUM END"), (4, "VACUUM START"), (3, "OPTIMIZE"), (2, "MERGE")]
        optimized = logged(out, f"OPTIMIZE {relation}")
        assert optimized["version"] == "3" and optimized["numFilesAdded"] == "1"
        removed = int(optimized["numFilesRemoved"])
        assert removed >= 2  # the first tablet and the MERGE's (one per task that wrote rows)
        # VACUUM deleted those tablets and the first one's deletion vector: no version needs them
        assert logged(out, f"VACUUM {relation}")["numDeletedFiles"] == str(removed + 1)
        assert len(self.files(project)) == 1

        _, out = run_dbt_and_capture(
            ["run-operation", "tablets_history", "--args", f"{{relation: {relation}, limit: 2}}"]
        )
        assert f"DESCRIBE HISTORY {relation} LIMIT 2: version=5, " in out
        assert f"DESCRIBE HISTORY {relation} LIMIT 2: version=4, " in out and "version=3," not in out

        # version 1's files are gone (vacuumed): restoring it is refused, clearly
        _, out = run_dbt_and_capture(
            ["run-operation", "tablets_restore", "--args", f"{{relation: {relation}, version: 1}}"],
            expect_pass=False,
        )
        assert "version 1 can no longer be restored: its files were deleted by VACUUM" in out
        # a MERGE without the post-hooks keeps version 3's files: it can be restored, in a new commit
        run_dbt(["run", "--vars", "{phase: 1, maintain: false}"])  # back to the first rows (2 -> b)
        assert self.rows(project) == [(1, "a"), (2, "b"), (3, "c")]
        _, out = run_dbt_and_capture(
            ["run-operation", "tablets_restore", "--args", f"{{relation: {relation}, version: 3}}"]
        )
        assert f"RESTORE TABLE {relation} TO VERSION AS OF 3: " in out
        assert self.rows(project) == [(1, "a"), (2, "B"), (3, "c")]
        assert self.history(project)[0][1] == "RESTORE"

        _, out = run_dbt_and_capture(["run-operation", "tablets_optimize", "--args", f"{{relation: {relation}}}"])
        assert f"OPTIMIZE {relation}: path=" in out
        _, out = run_dbt_and_capture(
            ["run-operation", "tablets_vacuum", "--args", f"{{relation: {relation}, dry_run: true}}"]
        )
        # the restore left the MERGE's tablet and deletion vector unreferenced: a dry run lists
        # them and deletes nothing, a vacuum deletes them
        listed = sorted(
            line.split(": path=", 1)[1].split(f"{self.root(project)}/", 1)[1]
            for line in out.splitlines()
            if f"VACUUM {relation} DRY RUN: path=" in line
        )
        kept = self.files(project)
        assert len(listed) >= 2 and set(listed) < set(kept)
        run_dbt(["run-operation", "tablets_vacuum", "--args", f"{{relation: {relation}}}"])
        assert self.files(project) == sorted(set(kept) - set(listed))
        assert self.rows(project) == [(1, "a"), (2, "B"), (3, "c")]

    def test_restore_needs_a_version_or_a_timestamp(self, project):
        _, out = run_dbt_and_capture(
            ["run-operation", "tablets_restore", "--args", f"{{relation: {project.test_schema}.kv}}"],
            expect_pass=False,
        )
        assert "give exactly one of version= (a number from DESCRIBE HISTORY) or timestamp=" in out
