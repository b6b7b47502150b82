"""The systems under test. merge.py runs each in its own process:

    python bench/systems.py bench --system ours --data DIR --work DIR --workloads upsert,sync --repeat 3
        loads the target, then per workload: restore, time the MERGE, repeat; one JSON line per workload
    python bench/systems.py once --system ours --data DIR --work DIR --workloads upsert
        one MERGE on the already restored table, for the whole-process time (merge.py times it)

ours and the Spark peers run on the project's .venv; the others on the venvs of bench/peers.py
(PEER_VENV). Engines are imported inside their class, so each interpreter needs only its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import traceback

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data

PARTIAL = pa.schema([("rows", pa.int64()), ("sum_v", pa.float64()), ("id_sum", pa.int64()), ("row_sum", pa.int64())])


class NotApplicable(Exception):
    """The system has nothing to measure for this workload."""


UPSERT = (
    "MERGE INTO {t} t USING {s} s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT *"
)
STATEMENTS = {
    "upsert": UPSERT,
    "upsert-small": UPSERT,  # a 0.1% source: broadcast up to ~200M target rows (10 MB)
    "sync": UPSERT + " WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 0 THEN DELETE",
    "delete-heavy": "MERGE INTO {t} t USING {s} s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "insert-only": UPSERT,
    "no-op": UPSERT,  # on a target the upsert was already merged into
    "degenerate": "MERGE INTO {t} t USING {s} s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
    "scale": UPSERT,  # a 10k-row source into a target in id order (data.generate(clustered=True))
}
WORKLOADS = list(STATEMENTS)
# scale runs on its own data, per size; upsert-small (for 100M runs) on request
MAIN_WORKLOADS = [w for w in STATEMENTS if w not in ("scale", "upsert-small")]
SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "4",  # ours' default, for the peers too
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
# Spark's Python workers (the final table's fingerprint) run this venv's Python, which has pyarrow
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def du(path: str) -> int:
    """Apparent bytes under path (a file or a directory)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _tree() -> set[int]:
    """This process and its live descendants: Spark's JVM and its Python workers."""
    parents: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    tree = {os.getpid()}
    while True:
        more = {p for p, pp in parents.items() if pp in tree and p not in tree}
        if not more:
            return tree
        tree |= more


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        return 0


def peak_rss_mb() -> float:
    """Peak resident memory (VmHWM) of this process and its live descendants: Spark's JVM and its
    Python workers. Workers that already exited are not counted."""
    return round(sum(_hwm_kb(pid) for pid in _tree()) / 1024, 1)


def reset_peaks() -> None:
    """Start every live process of the tree's VmHWM again from its current RSS (Linux's clear_refs)."""
    for pid in _tree():
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def peaks_mb() -> dict[str, float]:
    """VmHWM since ``reset_peaks``, by role: this process (the driver's Python; the whole engine
    for DuckDB, delta-rs, DuckLake), Spark's JVM (the driver and, in local mode, the executor),
    and the largest of Spark's Python workers alive now (a task's process; workers reused)."""
    out = {"process": _hwm_kb(os.getpid()) / 1024, "jvm": 0.0, "worker": 0.0}
    for pid in _tree() - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == "java":
            out["jvm"] += _hwm_kb(pid) / 1024
        elif comm.startswith("python"):
            out["worker"] = max(out["worker"], _hwm_kb(pid) / 1024)
    return {k: round(v, 1) for k, v in out.items()}


class System:
    """One system's table in work/<name>/: `live` is what MERGE changes, `pristine*` copies restore it."""

    name = ""
    live_name = "table"

    notes: tuple[str, ...] = ()  # how its statements differ from STATEMENTS, printed with the results

    def __init__(self, data_dir: str, work: str, memory: str, jars: tuple[str, ...] = ()) -> None:
        self.data_dir, self.work, self.memory, self.jars = data_dir, os.path.join(work, self.name), memory, jars
        self.live = os.path.join(self.work, self.live_name)
        self.order = " ORDER BY id" if data.is_clustered(data_dir) else ""  # keep a clustered target in id order

    def pristine(self, workload: str) -> str:
        return os.path.join(self.work, "pristine-noop" if workload == "no-op" else "pristine")

    def restore(self, workload: str) -> None:
        self.close()
        shutil.rmtree(self.live, ignore_errors=True)
        shutil.copytree(self.pristine(workload), self.live)

    def source(self, workload: str) -> str:
        return data.paths(self.data_dir, workload)[1]

    def prepare_noop(self) -> None:
        """The no-op target: the upsert merged once, by the system itself."""
        self.restore("upsert")
        self.open()
        self.merge("upsert")
        self.close()
        shutil.copytree(self.live, self.pristine("no-op"))

    # per system
    def open(self) -> None: ...
    def close(self) -> None: ...
    def load(self) -> None: ...
    def merge(self, workload: str) -> object: ...
    def final(self) -> pa.Table | None: ...
    def versions(self) -> dict[str, str]: ...

    def fingerprint(self) -> dict[str, object] | None:
        """data.fingerprint of the final table (None: the system keeps none)."""
        final = self.final()
        return data.fingerprint(final) if final is not None else None

    def written(self) -> str:
        """The directory a run writes into."""
        return self.live

    def bytes_written(self, before: int) -> int:
        return du(self.written()) - before

    def settle(self) -> None:
        """After the load, before the timed runs: leave nothing of the load to collect."""


class SparkSystem(System):
    TABLE: str | None = None  # the system's table in its Spark session (None: it keeps Parquet files or nothing)
    CONF: dict[str, str] = {}  # Spark settings of the system's session, over SPARK_CONF

    def fingerprint(self) -> dict[str, object] | None:
        """Each Spark task fingerprints its own rows of TABLE (data.Fingerprint adds up): a
        100M-row table is never collected."""
        if self.TABLE is None:
            return super().fingerprint()
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(data)  # the workers cannot import bench/data.py

        def part(batches):
            fp = data.Fingerprint()
            for b in batches:
                fp.add(b)
            yield pa.RecordBatch.from_pylist([fp.partial()], schema=PARTIAL)

        rows = self.spark.table(self.TABLE).mapInArrow(part, "rows long, sum_v double, id_sum long, row_sum long")
        fp = data.Fingerprint()
        for r in rows.collect():
            fp.merge(r.asDict())
        return fp.result()

    def open(self) -> None:
        from pyspark.sql import SparkSession

        if getattr(self, "spark", None) is None:
            b = SparkSession.builder.appName(f"bench-{self.name}").config("spark.driver.memory", self.memory)
            for k, v in {**SPARK_CONF, **self.CONF}.items():
                b = b.config(k, v)
            self.spark = b.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")

    def settle(self) -> None:
        # a full GC of the driver's JVM: a 100M-row load leaves gigabytes of garbage that the
        # first timed runs would otherwise pay to collect (the same for every Spark system)
        self.open()
        self.spark.sparkContext._jvm.java.lang.System.gc()

    def view_source(self, workload: str) -> None:
        self.spark.read.schema(data.SPARK_DDL).parquet(self.source(workload)).createOrReplaceTempView("source")

    def versions(self) -> dict[str, str]:
        import pyspark

        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        return {"pyspark": pyspark.__version__, "java": java}


class Ours(SparkSystem):
    name = "ours"
    TABLE = "bench.target"
    OPTIONS: dict[str, object] = {}  # the statement's run options (tablets.MergeOptions)
    BASELINE = False  # the engine of merge.py --baseline's checkout, not this one

    def open(self) -> None:
        if self.BASELINE and os.environ.get(BASELINE_ENV):
            sys.path.insert(0, os.path.join(os.environ[BASELINE_ENV], "adapter"))
        import tablets

        if getattr(self, "db", None) is None:
            # the metastore (Derby) lives beside the warehouse, in work/ours/
            self.db = tablets.connect(
                warehouse=os.path.join(self.work, "wh"),
                master="local[2]",
                conf={"spark.driver.memory": self.memory, **self.CONF},
            )
            self.spark = self.db.spark

    def load(self) -> None:
        self.db.sql("CREATE DATABASE IF NOT EXISTS bench")
        self.db.sql("DROP TABLE IF EXISTS bench.target")
        self.db.sql(
            f"CREATE TABLE bench.target (id BIGINT, k INT, v DOUBLE, s STRING, d DATE) "
            f"USING tablets LOCATION '{self.live}'"
        )
        self.db.sql(
            f"INSERT INTO bench.target SELECT * FROM parquet.`{data.paths(self.data_dir, 'upsert')[0]}`" + self.order
        )

    def merge(self, workload: str) -> object:
        self.view_source(workload)
        res = self.db.sql(STATEMENTS[workload].format(t="bench.target", s="source"), options=self.OPTIONS or None)
        m = res.metrics  # type: ignore[union-attr]
        return {
            "message": res.message,
            "tablets_scanned": m.tablets_scanned,
            "tablets_pruned": m.tablets_pruned,
            "tablets_read_on_driver": m.tablets_read_on_driver,
            "timings_ms": m.timings_ms,
        }

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version

        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        root = os.environ[BASELINE_ENV] if self.BASELINE else here
        git = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True)
        rev = git.stdout.strip()
        if rev.endswith("-dirty"):  # which uncommitted engine: a digest of the diff
            diff = subprocess.run(["git", "-C", root, "diff", "HEAD", "--", "adapter"], capture_output=True).stdout
            rev += f" diff {hashlib.sha1(diff).hexdigest()[:8]}"
        return {"dbt-tablets": f"{version('dbt-tablets')} ({rev})", **super().versions()}


class OursSpark(Ours):
    """Ours with the driver plan off: Spark's plan, as on a cluster."""

    name = "ours_spark"
    CONF = {"spark.tablets.merge.driverScanBytes": "0"}


class OursNoSkip(Ours):
    """Ours with ``skip_unchanged`` off: an UPDATE rewrites the rows it sets to their old values,
    as every peer does, and reads only the target columns it keeps (an upsert: the key)."""

    name = "ours_noskip"
    OPTIONS = {"skip_unchanged": False}


class OursSparkNoSkip(OursSpark):
    name = "ours_spark_noskip"
    OPTIONS = {"skip_unchanged": False}


class OursBaseline(Ours):
    name = "ours_base"
    BASELINE = True


class OursSparkBaseline(OursSpark):
    name = "ours_spark_base"
    BASELINE = True


BASELINE_ENV = "TABLETS_BENCH_BASELINE"  # a checkout of the engine to compare with (merge.py --baseline)


class SparkRewrite(SparkSystem):
    """What a dbt-spark user without a table format does: rewrite the whole Parquet table."""

    name = "spark_rewrite"
    QUERIES = {
        "upsert": "SELECT coalesce(t.id, s.id) AS id, if(t.id IS NULL, s.k, t.k) AS k, "
        "if(s.id IS NULL, t.v, s.v) AS v, if(s.id IS NULL, t.s, s.s) AS s, if(t.id IS NULL, s.d, t.d) AS d "
        "FROM target t FULL OUTER JOIN source s ON t.id = s.id",
        "delete-heavy": "SELECT t.* FROM target t LEFT ANTI JOIN source s ON t.id = s.id",
        "degenerate": "SELECT * FROM target",
    }
    QUERIES.update(
        {
            "insert-only": QUERIES["upsert"],
            "upsert-small": QUERIES["upsert"],
            "no-op": QUERIES["upsert"],
            "sync": QUERIES["upsert"] + " WHERE NOT (s.id IS NULL AND t.id % 100 = 0)",
        }
    )

    def load(self) -> None:
        shutil.copytree(data.paths(self.data_dir, "upsert")[0], self.live)

    def merge(self, workload: str) -> object:
        self.view_source(workload)
        self.spark.read.schema(data.SPARK_DDL).parquet(self.live).createOrReplaceTempView("target")
        new = self.live + ".new"
        self.spark.sql(self.QUERIES[workload]).write.mode("overwrite").parquet(new)
        shutil.rmtree(self.live)  # the swap: readers see the new table
        os.rename(new, self.live)
        return None

    def bytes_written(self, before: int) -> int:
        return du(self.live)  # the whole table is new

    def final(self) -> pa.Table:
        return pq.read_table(self.live, schema=data.SCHEMA)


class SparkFloor(SparkSystem):
    """The least a merge-on-read engine on this Spark can do: join the target's keys with the
    source keys (the columns a skip-unchanged check needs for no-op) and write the changed rows."""

    name = "spark_floor"
    # the matched keys come from an inner join that streams the target past the broadcast
    # source; a RIGHT JOIN of target and source cannot broadcast the source (the preserved
    # side), so Spark sort-merge joined all 10M target keys: 4.64 s against 1.65 s (quiet, 10M)
    MATCHED = "(SELECT t.id{cols} FROM target t JOIN source s2 ON t.id = s2.id) m"
    QUERIES = {
        "upsert": "SELECT s.*, m.id IS NOT NULL AS matched FROM source s "
        f"LEFT JOIN {MATCHED.format(cols='')} ON s.id = m.id",
        "sync": "SELECT s.*, t.id AS deleted FROM (SELECT id FROM target) t FULL OUTER JOIN source s "
        "ON t.id = s.id WHERE s.id IS NOT NULL OR t.id % 100 = 0",
        "delete-heavy": "SELECT t.id FROM (SELECT id FROM target) t LEFT SEMI JOIN source s ON t.id = s.id",
        "no-op": f"SELECT s.* FROM source s LEFT JOIN {MATCHED.format(cols=', t.v, t.s')} ON s.id = m.id "
        "WHERE m.id IS NULL OR m.v <> s.v OR m.s <> s.s",
    }
    QUERIES["insert-only"] = QUERIES["upsert-small"] = QUERIES["upsert"]

    def load(self) -> None:
        shutil.copytree(data.paths(self.data_dir, "upsert")[0], self.live)

    def merge(self, workload: str) -> object:
        if workload not in self.QUERIES:
            raise NotApplicable("nothing to do")
        self.view_source(workload)
        self.spark.read.schema(data.SPARK_DDL).parquet(self.live).createOrReplaceTempView("target")
        self.spark.sql(self.QUERIES[workload]).write.mode("overwrite").parquet(self.written())
        return None

    def prepare_noop(self) -> None:
        """The floor writes no table: its no-op target is the upsert's reference result."""
        data.write_parts(data.expected(self.data_dir, "upsert"), self.pristine("no-op"))  # the target's layout

    def written(self) -> str:
        return os.path.join(self.work, "out")

    def final(self) -> None:
        return None


class DuckDB(System):
    name = "duckdb"
    live_name = "db"

    def open(self) -> None:
        import duckdb

        if getattr(self, "con", None) is None:
            os.makedirs(self.live, exist_ok=True)
            self.con = duckdb.connect(os.path.join(self.live, "bench.duckdb"))

    def close(self) -> None:
        if getattr(self, "con", None) is not None:
            self.con.close()
            self.con = None

    def load(self) -> None:
        target = data.paths(self.data_dir, "upsert")[0]
        self.con.execute(
            f"CREATE OR REPLACE TABLE target AS SELECT * FROM read_parquet('{target}/*.parquet')" + self.order
        )
        self.con.execute("CHECKPOINT")

    def merge(self, workload: str) -> object:
        source = f"read_parquet('{self.source(workload)}')"
        return self.con.execute(STATEMENTS[workload].format(t="target", s=source)).fetchall()

    def final(self) -> pa.Table:
        return self.con.sql("SELECT * FROM target").to_arrow_table()

    def versions(self) -> dict[str, str]:
        import duckdb

        return {"duckdb": duckdb.__version__}


class DeltaRs(System):
    name = "deltalake"

    def load(self) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.live, pq.read_table(data.paths(self.data_dir, "upsert")[0], schema=data.SCHEMA))

    def merge(self, workload: str) -> object:
        from deltalake import DeltaTable

        m = DeltaTable(self.live).merge(
            source=pq.read_table(self.source(workload)), predicate="t.id = s.id", source_alias="s", target_alias="t"
        )
        if workload == "delete-heavy":
            m = m.when_matched_delete()
        elif workload != "degenerate":  # no clause: delta-rs' form of WHEN MATCHED THEN DO NOTHING
            m = m.when_matched_update(updates={"v": "s.v", "s": "s.s"}).when_not_matched_insert_all()
            if workload == "sync":
                m = m.when_not_matched_by_source_delete(predicate="t.id % 100 = 0")
        stats = m.execute()
        return {
            k: stats[k]
            for k in (
                "num_target_rows_inserted",
                "num_target_rows_updated",
                "num_target_rows_deleted",
                "num_target_files_added",
            )
        }

    def final(self) -> pa.Table:
        from deltalake import DeltaTable

        return DeltaTable(self.live).to_pyarrow_table()

    def versions(self) -> dict[str, str]:
        import deltalake

        return {"deltalake": deltalake.__version__}


class Iceberg(SparkSystem):
    """Apache Iceberg 1.10 on Spark 3.5 (bench/.venv-iceberg, jars from peers.iceberg_jars()): a
    Hadoop catalog in work/<name>/wh, metadata cache off so a restored directory is read anew."""

    name = "iceberg_v3_mor"
    live_name = "wh"
    PROPERTIES = {
        "format-version": "3",
        "write.merge.mode": "merge-on-read",
        "write.update.mode": "merge-on-read",
        "write.delete.mode": "merge-on-read",
    }
    TABLE = "ice.bench.target"
    notes = ("degenerate: Spark 3.5 SQL has no DO NOTHING; runs `WHEN MATCHED AND false THEN DELETE`",)

    def open(self) -> None:
        from pyspark.sql import SparkSession

        if getattr(self, "spark", None) is None:
            if not self.jars:
                raise RuntimeError(f"{self.name} needs --jars (merge.py passes peers.iceberg_jars())")
            conf = {
                **SPARK_CONF,
                "spark.driver.memory": self.memory,
                "spark.jars": ",".join(self.jars),
                "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                "spark.sql.catalog.ice.type": "hadoop",
                "spark.sql.catalog.ice.warehouse": self.live,
                "spark.sql.catalog.ice.cache-enabled": "false",
            }
            b = SparkSession.builder.appName(f"bench-{self.name}")
            for k, v in conf.items():
                b = b.config(k, v)
            self.spark = b.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")

    def load(self) -> None:
        props = ", ".join(f"'{k}' = '{v}'" for k, v in self.PROPERTIES.items())
        self.spark.sql(
            f"CREATE TABLE {self.TABLE} (id BIGINT, k INT, v DOUBLE, s STRING, d DATE) USING iceberg "
            f"TBLPROPERTIES ({props})"
        )
        self.spark.sql(
            f"INSERT INTO {self.TABLE} SELECT * FROM parquet.`{data.paths(self.data_dir, 'upsert')[0]}`" + self.order
        )

    def merge(self, workload: str) -> object:
        self.view_source(workload)
        text = STATEMENTS[workload]
        if workload == "degenerate":
            text = text.replace("WHEN MATCHED THEN DO NOTHING", "WHEN MATCHED AND false THEN DELETE")
        self.spark.sql(text.format(t=self.TABLE, s="source"))
        snap = self.spark.sql(f"SELECT summary FROM {self.TABLE}.snapshots ORDER BY committed_at DESC LIMIT 1").first()
        keep = (
            "added-data-files",
            "added-delete-files",
            "added-dvs",
            "added-position-deletes",
            "added-records",
            "deleted-records",
            "removed-data-files",
        )
        return {k: v for k, v in (snap["summary"] if snap else {}).items() if k in keep}

    def versions(self) -> dict[str, str]:
        jar = os.path.basename(self.jars[0]) if self.jars else "?"
        mode = self.PROPERTIES.get("write.merge.mode", "copy-on-write")
        return {
            "iceberg": jar.rsplit("-", 1)[-1].removesuffix(".jar"),
            "format": f"v{self.PROPERTIES['format-version']} {mode}",
            **super().versions(),
        }


class IcebergV2MoR(Iceberg):
    name = "iceberg_v2_mor"  # position delete files instead of deletion vectors
    PROPERTIES = {**Iceberg.PROPERTIES, "format-version": "2"}


class IcebergCoW(Iceberg):
    name = "iceberg_cow"  # rewrites every data file a MERGE touches
    PROPERTIES = {
        "format-version": "2",
        "write.merge.mode": "copy-on-write",
        "write.update.mode": "copy-on-write",
        "write.delete.mode": "copy-on-write",
    }


class DuckDB15(DuckDB):
    """DuckDB 1.5.5, native table: the version DuckLake's extension is built for (bench/.venv-ducklake)."""

    name = "duckdb15"


class DuckLake(DuckDB):
    """DuckLake on DuckDB 1.5.5: a DuckDB catalog file plus Parquet data files in work/ducklake/lake."""

    name = "ducklake"
    live_name = "lake"
    notes = (
        "sync: DuckLake refuses a MERGE with more than one UPDATE/DELETE action; runs the upsert MERGE "
        "plus `DELETE ... WHERE id % 100 = 0 AND id NOT IN (source ids)` in one transaction",
    )

    def open(self) -> None:
        import duckdb
        import duckdb_extension_ducklake

        if getattr(self, "con", None) is None:
            os.makedirs(self.live, exist_ok=True)
            ext = os.path.join(
                os.path.dirname(duckdb_extension_ducklake.__file__),
                "extensions",
                f"v{duckdb.__version__}",
                "ducklake.duckdb_extension",
            )
            self.con = duckdb.connect()
            self.con.execute(f"LOAD '{ext}'")  # from the wheel: nothing downloaded
            self.con.execute(f"ATTACH 'ducklake:{self.live}/catalog.ducklake' AS lake (DATA_PATH '{self.live}/data/')")
            self.con.execute("USE lake")

    def merge(self, workload: str) -> object:
        if workload != "sync":
            return super().merge(workload)
        source = f"read_parquet('{self.source(workload)}')"
        self.con.execute("BEGIN")
        merged = self.con.execute(UPSERT.format(t="target", s=source)).fetchall()
        deleted = self.con.execute(
            f"DELETE FROM target WHERE id % 100 = 0 AND id NOT IN (SELECT id FROM {source})"
        ).fetchall()
        self.con.execute("COMMIT")
        return {"merged": merged, "deleted": deleted}

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version

        return {**super().versions(), "duckdb-extension-ducklake": version("duckdb-extension-ducklake")}


SYSTEMS: dict[str, type[System]] = {
    c.name: c
    for c in (
        Ours,
        OursSpark,
        OursNoSkip,
        OursSparkNoSkip,
        OursBaseline,
        OursSparkBaseline,
        SparkFloor,
        SparkRewrite,
        Iceberg,
        IcebergV2MoR,
        IcebergCoW,
        DuckDB,
        DuckDB15,
        DuckLake,
        DeltaRs,
    )
}
PEER_VENV = {
    "duckdb": "peers",
    "deltalake": "peers",
    "duckdb15": "ducklake",
    "ducklake": "ducklake",
    "iceberg_v3_mor": "iceberg",
    "iceberg_v2_mor": "iceberg",
    "iceberg_cow": "iceberg",
}  # peers.python()


def emit(record: dict[str, object]) -> None:
    print("@@" + json.dumps(record), flush=True)  # merge.py reads the lines that start with @@


def bench(sys_: System, workloads: list[str], repeat: int, warmup: int = 1) -> None:
    t0 = time.perf_counter()
    sys_.open()
    sys_.load()
    sys_.close()
    shutil.copytree(sys_.live, sys_.pristine("upsert"))
    if "no-op" in workloads:
        sys_.prepare_noop()
    sys_.settle()
    emit({"versions": sys_.versions(), "load_s": round(time.perf_counter() - t0, 2), "notes": list(sys_.notes)})
    for i, w in enumerate(workloads):
        rec: dict[str, object] = {"workload": w}
        times = rec["times"] = []
        reset_peaks()
        try:
            # untimed first runs warm the JVM / caches up (``warmup``: how many, before the first workload)
            untimed = warmup if i == 0 else 0
            for run in range(repeat + untimed):
                sys_.restore(w)  # untimed; DuckDB reopens its file with a cold buffer pool, like a new dbt run
                sys_.open()
                if sys_.written() != sys_.live:
                    shutil.rmtree(sys_.written(), ignore_errors=True)
                before = du(sys_.written()) if os.path.exists(sys_.written()) else 0
                start = time.perf_counter()
                rec["result"] = sys_.merge(w)
                if run >= untimed:
                    times.append(round(time.perf_counter() - start, 4))
                rec["bytes"] = sys_.bytes_written(before)
            rec["peaks_mb"] = peaks_mb()  # before the fingerprint's own scan
            rec["fp"] = sys_.fingerprint()
        except NotApplicable as e:
            rec["skipped"] = str(e)
        except Exception as e:  # noqa: BLE001 - report, and go on with the other workloads
            rec["error"] = f"{type(e).__name__}: {e}".strip()[:2000]
            rec["trace"] = traceback.format_exc()[-3000:]
        emit(rec)
    emit({"peak_rss_mb": peak_rss_mb()})


def once(sys_: System, workload: str) -> None:
    sys_.open()
    result = sys_.merge(workload)
    emit({"workload": workload, "result": result, "peak_rss_mb": peak_rss_mb()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["bench", "once"])
    ap.add_argument("--system", required=True, choices=list(SYSTEMS))
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--memory", default="4g")
    ap.add_argument("--jars", default="", help="comma list for spark.jars (Iceberg's)")
    args = ap.parse_args()
    sys_ = SYSTEMS[args.system](args.data, args.work, args.memory, tuple(filter(None, args.jars.split(","))))
    workloads = args.workloads.split(",")
    if args.phase == "bench":
        shutil.rmtree(sys_.work, ignore_errors=True)
        os.makedirs(sys_.work)
        bench(sys_, workloads, args.repeat, args.warmup)
    else:
        once(sys_, workloads[0])


if __name__ == "__main__":
    main()
