"""The peers' environments, made by the harness on first use and never committed (bench/.gitignore).

    bench/.venv-peers      duckdb (newest), deltalake
    bench/.venv-ducklake   duckdb 1.5.5 + duckdb-extension-ducklake 1.5.5 (the extension must match
                           DuckDB's version exactly, and 1.5.5 is its newest build)
    bench/.venv-iceberg    PySpark 3.5.9 (Iceberg 1.10's Spark runtime is built for Spark 3.5)
    bench/.venv-dbt_duckdb dbt-core 1.11 + dbt-duckdb: bench/startup.py's peer (a dbt user's
                           local warehouse of choice), beside dbt-core's own version here

Iceberg's Spark runtime jar comes from the PyPI wheel `snowpark-connect-deps-iceberg`; that jar
lacks the Jackson it was built against (org.apache.iceberg.shaded.com.fasterxml.jackson), so plain
Jackson 2.18 from the wheel `snowpark-connect-deps-2` is relocated into that package here
(`relocate`: the class files' constant pools rewritten) and put on `spark.jars` beside it.
Both wheels are fetched with `pip download --no-deps` into the cache dir, once.

    python bench/peers.py [--cache DIR]      # make every environment and the Iceberg jars now
"""

from __future__ import annotations

import argparse
import glob
import os
import struct
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = "/tmp/tablets-bench/data"  # data.DEFAULT_CACHE: the jars go to its iceberg/
VENVS = {
    "peers": ["duckdb", "deltalake", "pyarrow", "numpy"],
    "ducklake": ["duckdb==1.5.5", "duckdb-extension-ducklake==1.5.5", "pyarrow", "numpy"],
    # PySpark 3.5's mapInArrow (the final table's fingerprint, systems.SparkSystem) needs pandas
    "iceberg": ["pyspark==3.5.9", "pyarrow", "numpy", "pandas"],
    "dbt_duckdb": ["dbt-core>=1.11,<1.12", "dbt-duckdb>=1.11,<1.12"],
}
ICEBERG_WHEEL, ICEBERG_JAR = "snowpark-connect-deps-iceberg", "iceberg-spark-runtime-3.5_2.12-*.jar"
JACKSON_WHEEL, JACKSON_JARS = (
    "snowpark-connect-deps-2",
    ("jackson-core-2.18", "jackson-databind-2.18", "jackson-annotations-2.18"),
)
SHADE_FROM, SHADE_TO = "com/fasterxml/jackson/", "org/apache/iceberg/shaded/com/fasterxml/jackson/"


def python(venv: str) -> str:
    """The interpreter of bench/.venv-<venv>, made first if it is missing or half made, and
    topped up when VENVS lists packages it was not made with."""
    root = os.path.join(HERE, f".venv-{venv}")
    py, done = os.path.join(root, "bin", "python"), os.path.join(root, ".complete")
    wanted = "\n".join(VENVS[venv])
    made = None
    if os.path.exists(done):
        with open(done) as f:
            made = f.read()
    if made is None or made != wanted:
        print(f"{'creating' if made is None else 'updating'} {root} ({', '.join(VENVS[venv])}) ...", flush=True)
        if made is None or not os.path.exists(py):
            subprocess.run(["python3.11", "-m", "venv", "--clear", root], check=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", *VENVS[venv]], check=True)
        with open(done, "w") as f:
            f.write(wanted)
    return py


def _wheel(name: str, cache: str) -> str:
    found = glob.glob(os.path.join(cache, name.replace("-", "_") + "-*.whl"))
    if not found:
        print(f"fetching {name} into {cache} ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", cache, name], check=True)
        found = glob.glob(os.path.join(cache, name.replace("-", "_") + "-*.whl"))
    return sorted(found)[-1]


def _extract(wheel: str, pattern: str, cache: str) -> str:
    """The one jar of the wheel whose name matches pattern, unpacked into cache."""
    import fnmatch

    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if fnmatch.fnmatch(os.path.basename(n), pattern)]
        if len(names) != 1:
            raise RuntimeError(f"{wheel}: expected one jar matching {pattern}, found {names}")
        out = os.path.join(cache, os.path.basename(names[0]))
        if not os.path.exists(out):
            with z.open(names[0]) as src, open(out + ".tmp", "wb") as dst:
                dst.write(src.read())
            os.rename(out + ".tmp", out)
        return out


def iceberg_jars(cache: str = DEFAULT_CACHE) -> list[str]:
    """[Iceberg's Spark runtime jar, the relocated Jackson jar], fetched and built once under cache/iceberg."""
    cache = os.path.join(cache, "iceberg")
    os.makedirs(cache, exist_ok=True)
    runtime = _extract(_wheel(ICEBERG_WHEEL, cache), ICEBERG_JAR, cache)
    shaded = os.path.join(cache, "jackson-2.18-iceberg-shaded.jar")
    if not os.path.exists(shaded):
        wheel = _wheel(JACKSON_WHEEL, cache)
        relocate([_extract(wheel, f"{j}*.jar", cache) for j in JACKSON_JARS], shaded)
    return [runtime, shaded]


def _relocate_text(b: bytes) -> bytes:
    dotted_from, dotted_to = SHADE_FROM.replace("/", "."), SHADE_TO.replace("/", ".")
    return b.replace(SHADE_FROM.encode(), SHADE_TO.encode()).replace(dotted_from.encode(), dotted_to.encode())


def relocate_class(data: bytes) -> bytes:
    """A class file with every constant-pool UTF-8 entry's package prefix moved (JVM spec 4.4): class
    names, descriptors and string constants all live there, so nothing else in the file changes."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    out, pos, i = [data[:10]], 10, 1
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
    while i < count:
        tag = data[pos]
        if tag == 1:  # CONSTANT_Utf8: u2 length, then the (modified UTF-8) bytes
            n = struct.unpack_from(">H", data, pos + 1)[0]
            text = _relocate_text(data[pos + 3 : pos + 3 + n])
            out.append(bytes([1]) + struct.pack(">H", len(text)) + text)
            pos += 3 + n
        elif tag in sizes:
            out.append(data[pos : pos + 1 + sizes[tag]])
            pos += 1 + sizes[tag]
        else:
            raise ValueError(f"unknown constant pool tag {tag} at entry {i}")
        i += 2 if tag in (5, 6) else 1  # longs and doubles take two entries
    out.append(data[pos:])
    return b"".join(out)


def relocate(jars: list[str], dest: str) -> None:
    """One jar holding the classes (and service files) of `jars`, moved from SHADE_FROM to SHADE_TO.
    module-info and signatures are dropped: a relocated jar is neither that module nor signed."""
    seen: set[str] = set()
    with zipfile.ZipFile(dest + ".tmp", "w", zipfile.ZIP_DEFLATED) as out:
        for jar in jars:
            with zipfile.ZipFile(jar) as z:
                for name in z.namelist():
                    base = os.path.basename(name)
                    if name.endswith("/") or base == "module-info.class" or name.startswith("META-INF/MANIFEST"):
                        continue
                    if name.startswith("META-INF/") and base.rsplit(".", 1)[-1] in ("SF", "RSA", "DSA"):
                        continue
                    body = z.read(name)
                    if name.endswith(".class"):
                        body = relocate_class(body)
                    elif name.startswith("META-INF/services/"):
                        body = _relocate_text(body)
                    new = _relocate_text(name.encode()).decode()
                    if new not in seen:  # LICENSE/NOTICE appear in each jar
                        seen.add(new)
                        out.writestr(new, body)
        out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nMulti-Release: true\n")
    os.rename(dest + ".tmp", dest)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    args = ap.parse_args()
    for v in VENVS:
        print(python(v))
    print("\n".join(iceberg_jars(args.cache)))
