"""DuckDB's delta extension as a reader process (run by ``.venv/duckdb-delta``'s interpreter, see
``duckdb_delta.py``). One request per line on stdin, ``{"root": ..., "version": ..., "s3": {AWS_* options}}``; each
answer is a JSON line, ``{"bytes": n}`` followed by an Arrow IPC stream of the rows, or
``{"error": text}``. Imports only DuckDB and pyarrow: it runs outside the project's environment."""

import json
import sys

import duckdb
import duckdb_ext
import pyarrow as pa


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET extension_directory = ?", (duckdb_ext.get_extension_dir(),))
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("LOAD delta")
    con.execute("LOAD httpfs")
    return con


def _s3_secret(con: duckdb.DuckDBPyConnection, opts: dict[str, str]) -> None:
    endpoint = opts.get("AWS_ENDPOINT_URL", "")
    host = endpoint.split("://", 1)[-1].rstrip("/")
    con.execute(
        "CREATE OR REPLACE SECRET s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?)",
        (
            opts.get("AWS_ACCESS_KEY_ID", ""),
            opts.get("AWS_SECRET_ACCESS_KEY", ""),
            opts.get("AWS_REGION", "us-east-1"),
            host,
            endpoint.startswith("https://"),
        ),
    )


def _quote(text: str) -> str:
    return text.replace("'", "''")


def _read(con: duckdb.DuckDBPyConnection, root: str, version: int | None) -> pa.Table:
    # a fresh ATTACH per read: DuckDB caches a table's snapshot per attachment
    con.execute("DETACH DATABASE IF EXISTS d")
    con.execute(f"ATTACH '{_quote(root)}' AS d (TYPE delta)")
    at = "" if version is None else f" AT (VERSION => {int(version)})"
    return con.execute(f"SELECT * FROM d{at}").fetch_arrow_table()


def main() -> None:
    con = _connect()
    out = sys.stdout.buffer
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req.get("s3"):
                _s3_secret(con, req["s3"])
            table = _read(con, req["root"], req.get("version"))
        except Exception as e:  # noqa: BLE001 - the client raises it, with the table and version
            out.write((json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n").encode())
            out.flush()
            continue
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        data = sink.getvalue().to_pybytes()
        out.write((json.dumps({"bytes": len(data)}) + "\n").encode())
        out.write(data)
        out.flush()


if __name__ == "__main__":
    main()
