"""The driver JVM's class archive (tablets.spark.jvm): which options a new session gets."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from tablets.spark import jvm

JAVA = 'openjdk version "17.0.15" 2025-04-15'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TABLETS_JVM_CACHE", str(tmp_path))
    monkeypatch.delenv(jvm.ENV, raising=False)
    return tmp_path


def _paths(cache, conf=None):
    name = f"spark-{jvm.key(JAVA, conf or {})}"
    final = cache / f"{name}.jsa"
    return final, cache / f"{name}.jsa.tmp", cache / f"{name}.jsa.log", cache / f"{name}.lock"


def test_the_first_session_dumps_the_archive_and_the_next_maps_it(cache):
    final, tmp, log, lock = _paths(cache)
    first = jvm.options(JAVA, {})
    assert first is not None and f"-XX:ArchiveClassesAtExit={tmp}" in first and f"file={log}" in first
    assert lock.read_text() == str(os.getpid())
    assert jvm.options(JAVA, {}) is None  # this process is still dumping it: another starts without
    tmp.write_bytes(b"archive")
    log.write_text("[info][cds,dynamic] Written dynamic archive 0x0 - 0x1 [984 bytes header, 7 bytes total]\n")
    mapped = jvm.options(JAVA, {})
    assert mapped == f"-XX:SharedArchiveFile={final} -Xlog:cds*=off"
    assert final.read_bytes() == b"archive" and not tmp.exists() and not log.exists() and not lock.exists()


def test_a_cut_dump_is_never_mapped_and_its_leftovers_go_once_quiet(cache):
    final, tmp, log, lock = _paths(cache)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(dead.stdout.strip())
    tmp.write_bytes(b"half an archive")
    log.write_text("[info][cds] Dumping shared data to file:\n")
    assert jvm.options(JAVA, {}) is None  # its JVM may still be writing
    old = time.time() - 2 * jvm.QUIET_SECONDS
    for p in (lock, tmp, log):
        os.utime(p, (old, old))
    again = jvm.options(JAVA, {})  # the leftovers removed; this process dumps anew
    assert again is not None and "ArchiveClassesAtExit" in again and not final.exists()
    assert lock.read_text() == str(os.getpid()) and not tmp.exists()


def test_the_key_follows_what_the_archive_must_match(cache):
    base = jvm.key(JAVA, {})
    assert jvm.key(JAVA, {}) == base
    assert jvm.key('openjdk version "17.0.16"', {}) != base
    assert jvm.key(JAVA, {"spark.driver.memory": "8g"}) != base
    assert jvm.key(JAVA, {"spark.jars": "/x.jar"}) != base
    assert jvm.key(JAVA, {"spark.sql.shuffle.partitions": "8"}) == base


def test_off_by_setting_or_by_the_users_own_options(cache, monkeypatch):
    assert jvm.options(JAVA, {jvm.CONF: "false"}) is None
    assert jvm.options(JAVA, {"spark.driver.extraJavaOptions": "-XX:SharedArchiveFile=/mine.jsa"}) is None
    monkeypatch.setenv(jvm.ENV, "0")
    assert jvm.options(JAVA, {}) is None
    assert list(cache.iterdir()) == []


def test_only_the_newest_archives_are_kept(cache):
    for i in range(4):
        p = cache / f"spark-{i:016x}.jsa"
        p.write_bytes(b"x")
        os.utime(p, (1000 + i, 1000 + i))
    jvm.options(JAVA, {})  # starts a dump of its own key: trims the others
    assert sorted(p.name for p in cache.glob("spark-*.jsa")) == [
        "spark-0000000000000002.jsa",
        "spark-0000000000000003.jsa",
    ]
