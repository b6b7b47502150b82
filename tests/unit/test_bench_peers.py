"""bench/peers.py's Jackson relocation (what lets Iceberg's Spark runtime jar load), on the real
Jackson jars that PySpark ships: every class moved into Iceberg's shaded package, the rest of each
class file untouched, and the relocated ObjectMapper compiled against and run on a real JVM."""

import glob
import importlib.util
import os
import shutil
import struct
import subprocess
import zipfile

import pyspark
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("bench_peers", os.path.join(ROOT, "bench", "peers.py"))
peers = importlib.util.module_from_spec(_spec)  # bench/ is no package; its module names stay off sys.path
_spec.loader.exec_module(peers)

JARS = sorted(
    p
    for name in ("jackson-core-2", "jackson-databind-2", "jackson-annotations-2")
    for p in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", f"{name}*.jar"))
)


@pytest.fixture(scope="module")
def shaded(tmp_path_factory):
    assert len(JARS) == 3, JARS
    out = str(tmp_path_factory.mktemp("shade") / "jackson-shaded.jar")
    peers.relocate(JARS, out)
    return out


def _utf8_entries(data: bytes) -> tuple[list[bytes], int]:
    """The constant pool's UTF-8 strings and the offset where the pool ends."""
    count, pos, i, out = struct.unpack_from(">H", data, 8)[0], 10, 1, []
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
    while i < count:
        tag = data[pos]
        if tag == 1:
            n = struct.unpack_from(">H", data, pos + 1)[0]
            out.append(data[pos + 3 : pos + 3 + n])
            pos += 3 + n
        else:
            pos += 1 + sizes[tag]
        i += 2 if tag in (5, 6) else 1
    return out, pos


@pytest.mark.unit
def test_every_class_moves_and_nothing_else_changes(shaded):
    with zipfile.ZipFile(shaded) as z:
        classes = [n for n in z.namelist() if n.endswith(".class")]
        assert classes and all(n.split("/")[0] in ("org", "META-INF") for n in classes)
        assert not [n for n in z.namelist() if n.startswith("com/") or n.endswith("module-info.class")]
        moved = {n: z.read(n) for n in classes}
    originals = {}
    for jar in JARS:
        with zipfile.ZipFile(jar) as z:
            originals.update({n: z.read(n) for n in z.namelist() if n.endswith(".class") and "module-info" not in n})
    assert len(moved) == len(originals)
    for name, data in originals.items():
        new = moved[name.replace(peers.SHADE_FROM, peers.SHADE_TO)]
        old_strings, old_end = _utf8_entries(data)
        new_strings, new_end = _utf8_entries(new)
        assert len(new_strings) == len(old_strings)
        assert new[new_end:] == data[old_end:]  # fields, methods, code: byte for byte
        for s in new_strings:  # no reference to the unshaded package is left
            assert s.replace(peers.SHADE_TO.encode(), b"").find(peers.SHADE_FROM.encode()) < 0
            assert s.replace(peers.SHADE_TO.replace("/", ".").encode(), b"").find(b"com.fasterxml.jackson.") < 0


def test_relocated_object_mapper_runs_on_a_jvm(shaded, tmp_path):
    if not shutil.which("javac"):
        pytest.fail("javac is needed (a JDK, as for Spark)")
    src = tmp_path / "Main.java"
    src.write_text(
        "import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;\n"
        "public class Main { public static void main(String[] a) throws Exception {\n"
        "  ObjectMapper m = new ObjectMapper();\n"
        '  System.out.println(m.writeValueAsString(m.readTree("{\\"format-version\\": 3, \\"ids\\": [1, 2]}")));\n'
        "} }\n"
    )
    subprocess.run(["javac", "-cp", shaded, "-d", str(tmp_path), str(src)], check=True)
    out = subprocess.run(["java", "-cp", f"{shaded}:{tmp_path}", "Main"], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == '{"format-version":3,"ids":[1,2]}'
