"""What a dbt process that connects does for its start-up, checked in child processes: the
plugin's import leaves the engine's modules for ``connections._load_engine`` (run once the
session starts in its thread), and the process ends without the interpreter's last collection of
its heap (``connections._skip_last_collection``): its cyclic garbage is left to the operating
system instead of being collected at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import gc, sys
    from dbt.adapters.tablets import connections

    class Cycle:
        def __del__(self):
            sys.stdout.write("collected\\n")
            sys.stdout.flush()

    if sys.argv[1] == "skip":
        connections._skip_last_collection()
        connections._skip_last_collection()  # once, however often the adapter is built
    gc.disable()  # the cycle below stays until the exit's own collection, if any
    a, b = Cycle(), Cycle()
    a.other, b.other = b, a
    del a, b
    print("exiting")
    """
)


def _run(mode: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split()


def test_the_exit_leaves_the_heap_to_the_operating_system():
    assert _run("skip") == ["exiting"]


def test_without_it_the_interpreter_collects_at_exit():  # what the skip saves
    assert _run("keep") == ["exiting", "collected", "collected"]


def test_the_plugin_imports_the_engine_only_once_the_session_starts():
    code = textwrap.dedent(
        """
        import sys
        import dbt.adapters.tablets
        from dbt.adapters.tablets import connections
        print(" ".join(m for m in connections.ENGINE_MODULES + ("tablets.engine", "pandas") if m in sys.modules) or "-")
        connections._load_engine()
        print(" ".join(m for m in connections.ENGINE_MODULES if m not in sys.modules) or "-")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["-", "-"]


def test_keep_alive_is_a_profile_key_for_a_local_spark_only():
    import pytest
    from dbt_common.exceptions import DbtRuntimeError

    from dbt.adapters.tablets.connections import KEEP_ALIVE, TabletsCredentials, _session_args

    creds = TabletsCredentials(schema="s", keep_alive=600)
    assert _session_args(creds)["keep_alive"] == 600 and "keep_alive" in creds._connection_keys()
    # a local Spark is kept warm unless the profile says 0; one elsewhere never is
    assert KEEP_ALIVE > 0 and _session_args(TabletsCredentials(schema="s"))["keep_alive"] == KEEP_ALIVE
    assert _session_args(TabletsCredentials(schema="s", master="local[2]"))["keep_alive"] == KEEP_ALIVE
    assert _session_args(TabletsCredentials(schema="s", keep_alive=0))["keep_alive"] == 0
    assert TabletsCredentials(schema="s", master="spark://10.0.0.5:7077").keep_alive == 0
    assert TabletsCredentials(schema="s", remote="sc://10.0.0.5:15002").keep_alive == 0
    assert TabletsCredentials(schema="s", keep_alive=60, master="local[2]").keep_alive == 60
    with pytest.raises(DbtRuntimeError, match="keep_alive"):
        TabletsCredentials(schema="s", keep_alive=-1)
    for elsewhere in ({"master": "spark://10.0.0.5:7077"}, {"remote": "sc://10.0.0.5:15002"}):
        with pytest.raises(DbtRuntimeError, match="leave `keep_alive` out"):
            TabletsCredentials(schema="s", keep_alive=60, **elsewhere)


def test_a_warm_server_holding_the_metastore_is_named_with_how_to_stop_it():
    from tablets.spark.metastore import Holder, MetastoreInUse

    from dbt.adapters.tablets.startup import metastore_in_use

    holder = Holder(4711, "host", "/v/bin/python -m tablets.spark.warm --serve /wh/_metastore/server")
    engine = MetastoreInUse("/wh", "/wh/_metastore", holder)
    assert "warm Spark server" in str(engine) and "--stop /wh" in str(engine)
    dbt = str(metastore_in_use(engine))
    assert "warm Spark server, pid 4711" in dbt and "`keep_alive`" in dbt and "--stop /wh" in dbt
