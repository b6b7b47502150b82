"""EXPLAIN text for a plan, in the spirit of the seed's plans (bottom-up operators)."""

from __future__ import annotations

from tablets.engine.names import CLAUSE, S_MARK, T_MARK
from tablets.engine.plan import JOIN_NAMES, Plan
from tablets.spec import ActionKind


def explain(plan: Plan, *, skip_unchanged: bool = True, route: list[str] | None = None) -> str:
    """The plan as text; ``route``: ``route.describe``'s lines (which plan it will take)."""
    spec = plan.spec
    head = f"{spec.head} AS {spec.target_alias}"
    if spec.source is not None:
        head += f" USING {spec.source.sql()} AS {spec.source_alias} ON {plan.on}"
    lines = [head]
    for clause, why in plan.dropped:
        lines.append(f"  dropped: {clause.describe()} -- {why}")
    if plan.noop:
        lines.append(f"degenerate: no-op ({plan.noop_reason}): no scan, no join, no Spark job, no commit")
        return "\n".join(lines)

    target_cols = ", ".join(plan.target_columns) or "(none)"
    rowid = " + row ids (tablet id, row number)" if plan.needs_row_ids else ""
    scan_t = f"[Scan] target {spec.target} AS {spec.target_alias}: {target_cols}{rowid}, deletion vectors applied, {T_MARK}: TRUE"
    if plan.compare_only:
        scan_t += (
            f"\n      compared last: {', '.join(plan.compare_only)} (only an UPDATE's unchanged check reads them): read"
            "\n      only for the pairs alike in the rest, by the driver or by Spark's merge tasks (the scan"
            "\n      leaves out those of types Arrow compares as Spark does; with cluster_by it reads them)"
        )
    if plan.keep_only:
        scan_t += (
            f"\n      kept: {', '.join(plan.keep_only)} (every UPDATE keeps them, nothing else reads them): Spark's"
            "\n      scan leaves them out and its merge tasks read them for the updated rows alone (not with"
            "\n      cluster_by or constraints)"
        )
    if plan.prune_keys:
        keys = ", ".join(f"{spec.target_alias}.{c} vs min/max({e})" for c, e in plan.prune_keys)
        scan_t += f"\n      tablet pruning: skip tablets whose key range cannot match ({keys})"
    if spec.source is not None:
        join = (
            f"[Join] {JOIN_NAMES[plan.join or 'inner']} ON {plan.on}\n"
            f"   \\_ [Scan] source {spec.source.sql()} AS {spec.source_alias}: {_source_reads(plan)}, {S_MARK}: TRUE (read once)\n"
            f"   \\_ {scan_t}\n"
            "   strategy: a source below spark.sql.autoBroadcastJoinThreshold is collected once (local rows up to\n"
            "   spark.tablets.merge.localSourceBytes, else persisted and counted in Arrow)\n"
            "   and broadcast into one scan of the target, deletion vectors applied to the pairs only; each pair\n"
            "   sends a marker to the task holding the source rows as candidate inserts, which inserts those\n"
            "   without one. A larger source: persisted, and a shuffle join. ON FALSE: no join at all."
        )
        if plan.prune_keys:
            join += (
                "\n   driver scan: with a local source and target tablets (after pruning) of at most\n"
                "   spark.tablets.merge.driverScanBytes, the driver selects the target rows whose keys the\n"
                "   source holds, and only those are joined"
            )
        if plan.plain:
            join += (
                "\n   driver merge: ON is the key equalities and every clause on rows at hand an unconditional\n"
                "   copy of plain columns, so with the target rows selected there the driver classifies and\n"
                "   writes them itself: no Spark job after the source's collect"
            )
            if plan.by_source:
                join += (
                    "\n   BY SOURCE on the driver: it reads the key and condition columns of every tablet and\n"
                    "   also selects the rows without a pair that a BY SOURCE clause acts on"
                )
    else:
        join = scan_t
    whens = []
    for b in plan.branches:
        guard = plan.guard(b)
        whens.append(f"        WHEN {guard} THEN {b.index}  -- {b.clause.describe()}")
    cases = "\n".join(whens)
    lines.append(f"[Classify] {CLAUSE} := CASE\n{cases}\n        ELSE NULL END")
    base_note = (
        "computed once; both streams leave it through one shuffle (with cluster_by: persisted, read by two jobs)"
        if plan.has_deletes and plan.has_inserts
        else "read by one stream"
    )
    lines.append(f"[Base] {base_note}")
    lines.append("   \\_ " + join.replace("\n", "\n      "))

    def branch_list(kinds: tuple[ActionKind, ...], what: str) -> str:
        items = []
        for b in plan.actions(*kinds):
            role = {
                ActionKind.UPDATE: f"UPDATE {what} image",
                ActionKind.DELETE: "DELETE",
                ActionKind.INSERT: "INSERT",
                ActionKind.REPLACE: "DELETE" if what == "old" else "INSERT",
            }[b.clause.action]
            items.append(f"{CLAUSE} = {b.index} ({role})")
        return " UNION ALL ".join(items)

    if plan.has_deletes:
        skip = (
            " (UPDATEs whose new image equals the old row are skipped: rows_unchanged)"
            if skip_unchanged and plan.actions(ActionKind.UPDATE)
            else ""
        )
        lines.append(
            "[Delete stream] row ids <- "
            + branch_list((ActionKind.DELETE, ActionKind.UPDATE, ActionKind.REPLACE), "old")
            + skip
            + "\n   \\_ [Shuffle] homecoming: hash by tablet id, one task writes each tablet's new deletion vector (old DV OR new deletes)"
            "\n   \\_ [Check] a row id seen twice: target row modified more than once -> error, nothing committed"
        )
    if plan.has_inserts:
        lines.append(
            "[Insert stream] new tablets <- "
            + branch_list((ActionKind.INSERT, ActionKind.UPDATE, ActionKind.REPLACE), "new")
        )
    nothing = [b for b in plan.branches if b.clause.action is ActionKind.DO_NOTHING]
    if nothing:
        lines.append(
            "[Do nothing] " + ", ".join(f"{CLAUSE} = {b.index}" for b in nothing) + " (classified, never written)"
        )
    lines.append("[Commit] fragments -> one new version (add_tablet + set_dv + commit_info)")
    lines += route or []
    return "\n".join(lines)


def _source_reads(plan: Plan) -> str:
    """The source columns the statement reads (``Plan.source_reads``): the others never leave its scan."""
    if plan.source_reads is None:
        return "every column"
    return ", ".join(plan.source_reads) or "no column (its rows alone)"
