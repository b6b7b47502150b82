"""The systems under test. merge.py runs each in its own process:

    python bench/systems.py bench --system ours --data DIR --work DIR --workloads upsert,sync --repeat 3
        loads the target, then per workload: restore, time the MERGE, repeat; one JSON line per workload
    python bench/systems.py once --system ours --data DIR --work DIR --workloads upsert
        one MERGE on the already restored table, for the whole-process time (merge.py times it)

ours and the Spark peers run on the project's .venv; duckdb and deltalake on bench/.venv-peers.
Engines are imported inside their class, so each interpreter needs only its own.
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
import data  # noqa: E402


class NotApplicable(Exception):
    """The system has nothing to measure for this workload."""

UPSERT = ("MERGE INTO {t} t USING {s} s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET v = s.v, s = s.s WHEN NOT MATCHED THEN INSERT *")
STATEMENTS = {
    "upsert": UPSERT,
    "sync": UPSERT + " WHEN NOT MATCHED BY SOURCE AND t.id % 100 = 0 THEN DELETE",
    "delete-heavy": "MERGE INTO {t} t USING {s} s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "insert-only": UPSERT,
    "no-op": UPSERT,  # on a target the upsert was already merged into
    "degenerate": "MERGE INTO {t} t USING {s} s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
}
WORKLOADS = list(STATEMENTS)
SPARK_CONF = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",  # ours' default, for the peers too
              "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
              "spark.sql.session.timeZone": "UTC"}


def du(path: str) -> int:
    """Apparent bytes under path (a file or a directory)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def peak_rss_mb() -> float:
    """Peak resident memory (VmHWM) of this process and its live descendants: Spark's JVM and its
    Python workers. Workers that already exited are not counted."""
    parents: dict[int, int] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    tree, total = {os.getpid()}, 0
    while True:
        more = {p for p, pp in parents.items() if pp in tree and p not in tree}
        if not more:
            break
        tree |= more
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
        except (OSError, StopIteration):
            pass
    return round(total / 1024, 1)


class System:
    """One system's table in work/<name>/: `live` is what MERGE changes, `pristine*` copies restore it."""

    name = ""
    live_name = "table"

    def __init__(self, data_dir: str, work: str, memory: str) -> None:
        self.data_dir, self.work, self.memory = data_dir, os.path.join(work, self.name), memory
        self.live = os.path.join(self.work, self.live_name)

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
    def written(self) -> str:
        """The directory a run writes into."""
        return self.live

    def bytes_written(self, before: int) -> int:
        return du(self.written()) - before


class SparkSystem(System):
    def open(self) -> None:
        from pyspark.sql import SparkSession

        if getattr(self, "spark", None) is None:
            b = SparkSession.builder.appName(f"bench-{self.name}").config("spark.driver.memory", self.memory)
            for k, v in SPARK_CONF.items():
                b = b.config(k, v)
            self.spark = b.getOrCreate()
            self.spark.sparkContext.setLogLevel("ERROR")

    def view_source(self, workload: str) -> None:
        self.spark.read.parquet(self.source(workload)).createOrReplaceTempView("source")

    def versions(self) -> dict[str, str]:
        import pyspark

        java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        return {"pyspark": pyspark.__version__, "java": java}


class Ours(SparkSystem):
    name = "ours"

    def open(self) -> None:
        import tablets

        if getattr(self, "db", None) is None:
            # the metastore (Derby) lives beside the warehouse, in work/ours/
            self.db = tablets.connect(warehouse=os.path.join(self.work, "wh"), master="local[2]",
                                      conf={"spark.driver.memory": self.memory})
            self.spark = self.db.spark

    def load(self) -> None:
        self.db.sql("CREATE DATABASE IF NOT EXISTS bench")
        self.db.sql("DROP TABLE IF EXISTS bench.target")
        self.db.sql(f"CREATE TABLE bench.target (id BIGINT, k INT, v DOUBLE, s STRING, d DATE) "
                    f"USING tablets LOCATION '{self.live}'")
        self.db.sql(f"INSERT INTO bench.target SELECT * FROM parquet.`{data.paths(self.data_dir, 'upsert')[0]}`")

    def merge(self, workload: str) -> object:
        self.view_source(workload)
        res = self.db.sql(STATEMENTS[workload].format(t="bench.target", s="source"))
        return {"message": res.message, "timings_ms": res.metrics.timings_ms}  # type: ignore[union-attr]

    def final(self) -> pa.Table:
        return self.spark.table("bench.target").toArrow()

    def versions(self) -> dict[str, str]:
        from importlib.metadata import version

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        git = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True)
        rev = git.stdout.strip()
        if rev.endswith("-dirty"):  # which uncommitted engine: a digest of the diff
            diff = subprocess.run(["git", "-C", root, "diff", "HEAD", "--", "adapter"], capture_output=True).stdout
            rev += f" diff {hashlib.sha1(diff).hexdigest()[:8]}"
        return {"dbt-tablets": f"{version('dbt-tablets')} ({rev})", **super().versions()}


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
    QUERIES.update({"insert-only": QUERIES["upsert"], "no-op": QUERIES["upsert"],
                    "sync": QUERIES["upsert"] + " WHERE NOT (s.id IS NULL AND t.id % 100 = 0)"})

    def load(self) -> None:
        shutil.copytree(data.paths(self.data_dir, "upsert")[0], self.live)

    def merge(self, workload: str) -> object:
        self.view_source(workload)
        self.spark.read.parquet(self.live).createOrReplaceTempView("target")
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
    QUERIES = {
        "upsert": "SELECT s.*, t.id IS NOT NULL AS matched FROM (SELECT id FROM target) t "
                  "RIGHT JOIN source s ON t.id = s.id",
        "sync": "SELECT s.*, t.id AS deleted FROM (SELECT id FROM target) t FULL OUTER JOIN source s "
                "ON t.id = s.id WHERE s.id IS NOT NULL OR t.id % 100 = 0",
        "delete-heavy": "SELECT t.id FROM (SELECT id FROM target) t LEFT SEMI JOIN source s ON t.id = s.id",
        "no-op": "SELECT s.* FROM (SELECT id, v, s FROM target) t RIGHT JOIN source s ON t.id = s.id "
                 "WHERE t.id IS NULL OR t.v <> s.v OR t.s <> s.s",
    }
    QUERIES["insert-only"] = QUERIES["upsert"]

    def load(self) -> None:
        shutil.copytree(data.paths(self.data_dir, "upsert")[0], self.live)

    def merge(self, workload: str) -> object:
        if workload not in self.QUERIES:
            raise NotApplicable("nothing to do")
        self.view_source(workload)
        self.spark.read.parquet(self.live).createOrReplaceTempView("target")
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
        self.con.execute(f"CREATE OR REPLACE TABLE target AS SELECT * FROM read_parquet('{target}/*.parquet')")
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

        m = DeltaTable(self.live).merge(source=pq.read_table(self.source(workload)), predicate="t.id = s.id",
                                        source_alias="s", target_alias="t")
        if workload == "delete-heavy":
            m = m.when_matched_delete()
        elif workload != "degenerate":  # no clause: delta-rs' form of WHEN MATCHED THEN DO NOTHING
            m = m.when_matched_update(updates={"v": "s.v", "s": "s.s"}).when_not_matched_insert_all()
            if workload == "sync":
                m = m.when_not_matched_by_source_delete(predicate="t.id % 100 = 0")
        stats = m.execute()
        return {k: stats[k] for k in ("num_target_rows_inserted", "num_target_rows_updated",
                                      "num_target_rows_deleted", "num_target_files_added")}

    def final(self) -> pa.Table:
        from deltalake import DeltaTable

        return DeltaTable(self.live).to_pyarrow_table()

    def versions(self) -> dict[str, str]:
        import deltalake

        return {"deltalake": deltalake.__version__}


SYSTEMS: dict[str, type[System]] = {c.name: c for c in (Ours, SparkFloor, SparkRewrite, DuckDB, DeltaRs)}
PEER_VENV = {"duckdb", "deltalake"}  # run on bench/.venv-peers


def emit(record: dict[str, object]) -> None:
    print("@@" + json.dumps(record), flush=True)  # merge.py reads the lines that start with @@


def bench(sys_: System, workloads: list[str], repeat: int) -> None:
    t0 = time.perf_counter()
    sys_.open()
    sys_.load()
    sys_.close()
    shutil.copytree(sys_.live, sys_.pristine("upsert"))
    if "no-op" in workloads:
        sys_.prepare_noop()
    emit({"versions": sys_.versions(), "load_s": round(time.perf_counter() - t0, 2)})
    for i, w in enumerate(workloads):
        rec: dict[str, object] = {"workload": w}
        times = rec["times"] = []
        try:
            for run in range(repeat + (i == 0)):  # an untimed first run warms the JVM / caches up
                sys_.restore(w)  # untimed; DuckDB reopens its file with a cold buffer pool, like a new dbt run
                sys_.open()
                if sys_.written() != sys_.live:
                    shutil.rmtree(sys_.written(), ignore_errors=True)
                before = du(sys_.written()) if os.path.exists(sys_.written()) else 0
                start = time.perf_counter()
                rec["result"] = sys_.merge(w)
                if run or i:
                    times.append(round(time.perf_counter() - start, 4))
                rec["bytes"] = sys_.bytes_written(before)
            final = sys_.final()
            rec["fp"] = data.fingerprint(final) if final is not None else None
        except NotApplicable as e:
            rec["skipped"] = str(e)
        except Exception as e:  # report, and go on with the other workloads
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
    ap.add_argument("--memory", default="4g")
    args = ap.parse_args()
    sys_ = SYSTEMS[args.system](args.data, args.work, args.memory)
    workloads = args.workloads.split(",")
    if args.phase == "bench":
        shutil.rmtree(sys_.work, ignore_errors=True)
        os.makedirs(sys_.work)
        bench(sys_, workloads, args.repeat)
    else:
        once(sys_, workloads[0])


if __name__ == "__main__":
    main()
