"""The dbt-tablets adapter: dbt-spark's adapter, plus what the ``merge_tablets`` and
``incremental`` (``file_format='tablets'``) materializations ask of Python.

The Jinja orchestrates; these ``@available`` methods decide:

- ``merge_config(config, model_name)``: the validated, frozen config (every problem in one error);
- ``render_merge(cfg, target, source, target_columns, source_columns)``: the statement;
- ``snapshot_config(config, name)``: a dbt snapshot's tablet-table options (validated);
- ``table_config(config, model_name)``: a ``table`` model's tablet-table options (validated);
  these three also warn, once per model, of dbt-databricks keys a tablet table ignores;
- ``contract_ddl(model, properties)``: an enforced contract's constraints in the CREATE
  (``contracts.py``), with a warning for each the engine cannot enforce;
- ``run_statement(cfg, sql)``: a model's own statement, run with its engine options
  (``skip_unchanged``, tablet size, ...) handed to the cursor as a value through dbt's
  ``add_query`` (the ``tablets_run_main`` macro);
- ``is_tablet_table``, ``tablet_stats``, and the DDL that Spark cannot do on a tablet table:
  rename, add / drop / retype columns, drop the tablet tables of a schema;
- ``persist_tablet_docs``: ``persist_docs`` as the table's comments (one commit); the docs
  catalog carries every relation's comments (``docs.py``);
- ``load_seed(cfg, sql, rows)``: a seed's one statement, its rows as data (``seeds.py``).

Errors of the engine (``tablets.TabletsError``) become ``DbtRuntimeError`` with the engine's
message and its ``Help:`` line.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dbt.adapters.base import ConstraintSupport, PythonJobHelper, available
from dbt.adapters.base.impl import log_code_execution
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.events.types import AdapterEventWarning
from dbt.adapters.spark.impl import GET_COLUMNS_IN_RELATION_RAW_MACRO_NAME, SparkAdapter
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.events.contextvars import get_node_info
from dbt_common.events.functions import warn_or_error
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.tablets.config import (
    INCREMENTAL,
    MERGE_TABLETS,
    MergeConfig,
    TableConfig,
    config_warnings,
    parse_merge_config,
    parse_table_config,
)
from dbt.adapters.tablets.connections import TabletsConnectionManager
from dbt.adapters.tablets.contracts import parse_contract, sync_statements
from dbt.adapters.tablets.docs import describe_comments
from dbt.adapters.tablets.python_models import (
    SUBMISSION_METHOD,
    SessionPythonJobHelper,
    drop_views,
    submission_method,
)
from dbt.adapters.tablets.relation import TabletsRelation
from dbt.adapters.tablets.render import render_merge
from dbt.adapters.tablets.seeds import ROWS, rows_view
from dbt.adapters.tablets.session import StatementOptions
from dbt.adapters.tablets.snapshot import parse_snapshot_config
from tablets.exceptions import TabletsError
from tablets.sessions import backend, warehouse_of

if TYPE_CHECKING:
    from tablets.db import Database

logger = AdapterLogger("Tablets")


@contextmanager
def engine_errors(what: str) -> Generator[None, None, None]:

    try:
        yield
    except TabletsError as e:
        raise DbtRuntimeError(f"{what}: {e}") from e


def _java_version(spark: Any) -> str:

    try:
        return backend(spark).java_version()  # "remote" over Spark Connect
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return f"unknown ({e})"


def _names(columns: Iterable[Any]) -> list[str]:
    out = []
    for c in columns or ():
        name = getattr(c, "name", None) or getattr(c, "column", None) or c
        out.append(str(name))
    return out


class TabletsAdapter(SparkAdapter):
    Relation = TabletsRelation
    ConnectionManager = TabletsConnectionManager
    # what a tablet table enforces of a dbt contract (contracts.py): not_null and check are the
    # table's constraints, primary_key its key; unique and foreign_key get a warning
    CONSTRAINT_SUPPORT = {
        ConstraintType.check: ConstraintSupport.ENFORCED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
        ConstraintType.primary_key: ConstraintSupport.ENFORCED,
        ConstraintType.unique: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.foreign_key: ConstraintSupport.NOT_ENFORCED,
    }

    # --- the session --------------------------------------------------------------------------

    def _database(self) -> Database:
        conn = self.connections.get_thread_connection()
        return conn.handle.database

    def _name(self, relation: BaseRelation) -> str:
        return f"{relation.schema}.{relation.identifier}"

    def debug_query(self) -> None:
        """``dbt debug``: a query, then the versions and places of the running session."""
        self.execute("select 1 as id")
        spark = self._database().spark

        java = _java_version(spark)
        logger.info(f"  spark: {spark.version}")
        logger.info(f"  java: {java}")
        logger.info(f"  warehouse: {warehouse_of(spark)}")

    # --- the materializations -------------------------------------------------------------------

    @available
    def check_grants(self, grants: Any, model_name: str) -> str:
        """Refuse a model's ``grants`` before anything is written: Spark (embedded, a standalone
        cluster, Spark Connect) has no GRANT statement and keeps no privileges, so dbt-spark's
        grants would fail after the model's rows were committed."""
        if not grants:
            return ""
        raise DbtRuntimeError(
            f"model '{model_name}': grants = {dict(grants) if isinstance(grants, Mapping) else grants!r}: "
            "Spark has no GRANT statement (it keeps no privileges), so these grants cannot be applied; "
            "nothing was written.\n"
            "  fix: remove `grants` from this model (or its `+grants` in dbt_project.yml), or give it only "
            "on targets whose engine grants: grants: \"{{ {'select': ['reporter']} if target.name == 'prod' "
            'else {} }}"'
        )

    @available
    def merge_config(
        self, config: Mapping[str, Any], model_name: str, materialization: str = MERGE_TABLETS
    ) -> MergeConfig:
        """The model's config, validated before any SQL runs (raises one error listing every problem)."""
        if materialization not in (MERGE_TABLETS, INCREMENTAL):
            raise DbtRuntimeError(f"merge_config: unknown materialization {materialization!r}")
        cfg = parse_merge_config(config, model_name, materialization)
        self._warn_config(config, model_name)
        return cfg

    @available
    def snapshot_config(self, config: Mapping[str, Any], name: str) -> TableConfig:
        """A dbt snapshot's tablet-table options, validated before any SQL runs."""
        cfg = parse_snapshot_config(config, name)
        self._warn_config(config, name)
        return cfg

    @available
    def table_config(self, config: Mapping[str, Any], model_name: str) -> TableConfig:
        """A ``table`` model's tablet-table options (file_format='tablets'), validated."""
        cfg = parse_table_config(config, model_name)
        self._warn_config(config, model_name)
        return cfg

    def _warn_config(self, config: Mapping[str, Any], model_name: str) -> None:
        """The config's warnings, each once per model and dbt command (microbatch runs the
        materialization once per batch), as dbt's warnings: ``--warn-error`` (or
        ``--warn-error-options`` naming ``AdapterEventWarning``) makes them the model's error."""
        self._warn_once(model_name, config_warnings(config, model_name))

    def _warn_once(self, model_name: str, texts: Iterable[str]) -> None:
        warned = self.__dict__.setdefault("_tablets_warned", set())
        for text in texts:
            if (model_name, text) not in warned:
                warned.add((model_name, text))
                warn_or_error(AdapterEventWarning(name=logger.name, base_msg=text, args=[], node_info=get_node_info()))

    @available
    def contract_ddl(self, model: Mapping[str, Any], properties: Mapping[str, str]) -> tuple[str, dict[str, str]]:
        """The column list (types, NOT NULL, CHECK) of the CREATE of a model with an enforced
        contract, and its table properties with the contract's primary key as the table's key;
        ("", properties) without one. Constraints a tablet table cannot enforce: one warning each."""
        contract = parse_contract(model)
        if contract is None:
            return "", dict(properties)
        self._warn_once(contract.model, contract.warnings)
        return contract.ddl(), contract.properties(properties)

    @available
    def sync_contract(self, model: Mapping[str, Any], relation: BaseRelation) -> str:
        """A later run of a model with an enforced contract: the existing table's NOT NULL and
        CHECK constraints made the contract's (``contracts.sync_statements``), before its merge."""
        contract = parse_contract(model)
        if contract is None:
            return ""
        self._warn_once(contract.model, contract.warnings)
        db, name = self._database(), self._name(relation)
        from tablets.constraints import of_table  # (loaded beside the session: connections._load_engine)

        with engine_errors(f"the contract of {model.get('name')} on {relation}"):
            for statement in sync_statements(contract, name, *of_table(db.table_of(name))):
                logger.debug(f"tablets: {statement}")
                db.sql(statement)
        return ""

    @available
    def adopt_key(self, cfg: MergeConfig, relation: BaseRelation) -> str:
        """merge_tablets taking over a tablet table another materialization built, which has no
        key: the model's unique_key becomes the table's key once its rows are checked (no two
        with one key), in one commit, before the merge (``tablets.constraints.declare_key``)."""
        if cfg.materialization != MERGE_TABLETS or not cfg.unique_key:
            return ""
        db, name = self._database(), self._name(relation)
        from tablets.constraints import of_table  # (loaded beside the session: connections._load_engine)

        if of_table(db.table_of(name))[2]:
            return ""
        keys = ",".join(cfg.unique_key).replace("'", "''")
        with engine_errors(f"the unique_key of {cfg.model} on {relation}"):
            db.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('key_columns' = '{keys}')")
        return ""

    @available
    def render_merge(
        self,
        cfg: MergeConfig,
        target_relation: BaseRelation,
        source_relation: BaseRelation,
        target_columns: Sequence[Any],
        source_columns: Sequence[Any],
    ) -> str:
        """The MERGE (or INSERT ... ON CONFLICT, or INSERT) of ``source_relation`` into the target."""
        return render_merge(
            cfg,
            str(target_relation),
            str(source_relation),
            _names(target_columns),
            _names(source_columns),
        )

    @available
    def run_statement(self, cfg: MergeConfig | TableConfig, sql: str) -> AdapterResponse:
        """Run a model's own statement (its MERGE, CREATE ... AS, a snapshot's MERGE) with the
        engine options of ``cfg`` (``skip_unchanged``, tablet size, ...) and the upstream
        versions its ``tablets_changes`` read, recorded in its commit (``changes.py``): a value
        in the place of dbt's query bindings, so the statement goes through dbt's ``add_query``
        (log lines, query comment, errors) with its SQL as dbt shows it."""
        return self.connections.run_statement(sql, statement_options(cfg))

    @available
    def tablets_changes_sql(self, model: str, upstream: BaseRelation, this: BaseRelation, full_refresh: bool) -> str:
        """The FROM item of ``tablets_changes(upstream)``: its changes since what ``this`` last
        consumed (the whole table on a first run or full refresh)."""
        from dbt.adapters.tablets.changes import changes_sql  # (as above)

        with engine_errors(f"tablets_changes({upstream}) of {model}"):
            return changes_sql(self._database(), model, self._name(upstream), self._name(this), full_refresh)

    @available
    def is_tablet_table(self, relation: BaseRelation | None) -> bool:
        if relation is None or relation.identifier is None or relation.schema is None:
            return False
        return self._database().is_tablet_table(self._name(relation))

    @available
    def tablet_stats(self, relation: BaseRelation) -> dict[str, Any] | None:
        """Rows, bytes, tablets, deletion vectors, deleted rows and version of a tablet table."""
        db = self._database()
        root = db.root_of(self._name(relation))
        if root is None:
            return None
        with engine_errors(f"reading the statistics of {relation}"):
            snap = db.table_at(root).snapshot()
        states = list(snap.tablets.values())

        from tablets.constraints import of_table  # (as above)

        checks, not_null, _ = of_table(db.table_at(root))
        shown = [f"{c} NOT NULL" for c in not_null] + [f"{n}: CHECK ({e})" for n, e in checks]
        return {
            **({"constraints": "; ".join(shown)} if shown else {}),  # (the docs catalog's row, when any)
            "rows": snap.live_rows,
            "bytes": sum(s.add.bytes for s in states),
            "tablets": len(states),
            "deletion_vectors": snap.num_dvs,
            "deleted_rows": sum(s.dv.cardinality for s in states if s.dv is not None),
            "version": snap.version,
            "location": root,
        }

    @available
    def load_seed(self, cfg: TableConfig, sql: str, agate_table: Any) -> AdapterResponse:
        """Run a seed's statement (``macros/adapters/seed.sql``) with its rows as the view it
        reads (``seeds.ROWS``): one commit, its values as data rather than SQL (``seeds.py``)."""
        with rows_view(self._database().spark, len(agate_table.column_names), agate_table.rows) as view:
            return self.run_statement(cfg, sql.replace(ROWS, view))

    # --- Python models (python_models.py) -------------------------------------------------------

    @property
    def default_python_submission_method(self) -> str:
        return SUBMISSION_METHOD

    @property
    def python_submission_helpers(self) -> dict[str, type[PythonJobHelper]]:
        return {SUBMISSION_METHOD: SessionPythonJobHelper}

    @log_code_execution
    def submit_python_job(self, parsed_model: dict, compiled_code: str) -> AdapterResponse:
        """Run a Python model in this process, on this thread's Spark session (dbt-core calls it
        from the materialization's ``statement(language='python')``); its frame becomes a view."""
        helper = self.python_submission_helpers[submission_method(parsed_model)]
        job = helper(parsed_model, self.connections.profile.credentials, database=self._database())  # type: ignore[call-arg]
        return self.generate_python_submission_response(job.submit(compiled_code))

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        return submission_result.response()

    def post_model_hook(self, config: Mapping[str, Any], context: Any) -> None:
        super().post_model_hook(config, context)
        drop_views(self._database)  # a Python model's view, left by a failed materialization

    # --- DDL Spark cannot do on a tablet table ------------------------------------------------------

    @available
    def rename_tablet_table(self, from_relation: BaseRelation, to_relation: BaseRelation) -> str:
        with engine_errors(f"renaming {from_relation} to {to_relation}"):
            self._database().rename_table(self._name(from_relation), self._name(to_relation))
        return ""

    @available
    def alter_tablet_columns(
        self,
        relation: BaseRelation,
        add_columns: Sequence[Any] | None,
        remove_columns: Sequence[Any] | None,
    ) -> str:
        """Schema evolution of a tablet table: new columns (older tablets read them as NULL) and
        dropped columns (no longer read), then the catalog entry follows."""
        db = self._database()
        name = self._name(relation)
        with engine_errors(f"changing the columns of {relation}"):
            table = db.table_of(name)
            drop = {n.lower() for n in _names(remove_columns or [])}
            kept = [c for c in table.snapshot().metadata.schema if c[0].lower() not in drop]
            have = {c[0].lower() for c in kept}
            added = [(c.name, c.data_type, True) for c in add_columns or [] if c.name.lower() not in have]
            table.set_schema(kept + added, operation="CHANGE COLUMNS")  # one commit for both
            db.sync_schema(name)
        return ""

    @available
    def alter_tablet_column_type(self, relation: BaseRelation, column_name: str, new_type: str) -> str:
        db = self._database()
        name = self._name(relation)
        with engine_errors(f"changing the type of {relation}.{column_name} to {new_type}"):
            table = db.table_of(name)
            schema = [
                (n, new_type if n.lower() == column_name.lower() else t, nullable)
                for n, t, nullable in table.snapshot().metadata.schema
            ]
            table.set_schema(schema, operation="ALTER COLUMN TYPE")
            db.sync_schema(name)
        return ""

    @available
    def drop_tablet_tables_in_schema(self, schema_relation: BaseRelation) -> str:
        """Drop every tablet table of a schema (catalog entry, data, registry) before the schema."""
        db = self._database()
        with engine_errors(f"dropping the tablet tables of {schema_relation.schema}"):
            db.drop_tables_in(schema_relation.schema)
        return ""

    @available
    def persist_tablet_docs(self, relation: BaseRelation, description: str | None, columns: Mapping[str, str]) -> str:
        """The model's description and column descriptions as the tablet table's comments, in
        one commit (none when they are already so)."""

        from tablets.statements.metadata import set_comments  # (as above)

        db = self._database()
        with engine_errors(f"persisting the docs of {relation}"):
            set_comments(db.table_of(self._name(relation)), description, columns, {"dbt_relation": str(relation)})
        return ""

    # --- relations and the docs catalog -----------------------------------------------------------

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[BaseRelation]:
        """The schema's relations. SHOW TABLE EXTENDED of any schema also lists the session's
        temporary views (dbt's own ``__dbt_tmp`` views, a Python model's), which belong to no
        schema: dbt's catalog cannot key them and ``docs generate`` failed on them."""
        return [r for r in super()._build_spark_relation_list(row_list, relation_info_func) if r.schema]

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        try:
            stats = self.tablet_stats(relation)  # None for any other table
        except DbtRuntimeError as e:
            logger.debug(f"tablets: no statistics for {relation}: {e}")
            stats = None
        extra = catalog_stats(stats) if stats is not None else {}
        try:  # comments: see tablets docs.py
            rows = self.execute_macro(GET_COLUMNS_IN_RELATION_RAW_MACRO_NAME, kwargs={"relation": relation})
            table_comment, comments = describe_comments(rows)
        except DbtRuntimeError as e:
            logger.debug(f"tablets: no comments for {relation}: {e}")
            table_comment, comments = None, {}
        for index, column in enumerate(super()._get_columns_for_catalog(relation), start=1):
            column.update(extra)
            column["column_index"] = index  # 1-based, as every other adapter's catalog
            column["table_comment"] = table_comment
            column["column_comment"] = comments.get(column.get("column_name") or "")
            yield column

    @classmethod
    def _get_adapter_specific_run_info(cls, config: Any) -> dict[str, Any]:
        info = super()._get_adapter_specific_run_info(config)
        info["adapter_type"] = "tablets"
        return info


def statement_options(cfg: MergeConfig | TableConfig) -> StatementOptions:
    """The options of ``cfg``'s statement, with what its ``tablets_changes`` consumed (once)."""
    from dbt.adapters.tablets.changes import take_consumed  # (loaded beside the session: connections._load_engine)

    options = cfg.statement_options()
    ansi = options.pop("ansi", None)
    consumed = take_consumed(cfg.model)
    if consumed is not None:
        options["parameters"] = (*options.get("parameters", ()), consumed)
    return StatementOptions(engine=tuple(options.items()), ansi=ansi)


_STATS = (
    ("rows", "Row Count", "Live rows (deletion vectors applied)"),
    ("bytes", "Approximate Size", "Bytes of the live tablets' Parquet files"),
    ("tablets", "Tablets", "Immutable Parquet tablets of the current version"),
    ("deletion_vectors", "Deletion Vectors", "Tablets with a deletion vector"),
    ("deleted_rows", "Deleted Rows", "Rows masked by deletion vectors (compaction reclaims them)"),
    ("version", "Version", "The table's latest committed version"),
)


def catalog_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Tablet statistics as dbt catalog ``stats:<id>:<label|value|description|include>`` keys."""
    out: dict[str, Any] = {}
    for key, label, description in _STATS:
        out[f"stats:{key}:label"] = label
        out[f"stats:{key}:value"] = stats.get(key)
        out[f"stats:{key}:description"] = description
        out[f"stats:{key}:include"] = True
    if stats.get("constraints"):
        out.update({"stats:constraints:label": "Constraints", "stats:constraints:value": stats["constraints"]})
        out["stats:constraints:description"] = "NOT NULL and CHECK constraints, enforced on every write"
        out["stats:constraints:include"] = True
    return out
