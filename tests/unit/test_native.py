"""The native-read extension's build and settings (tablets.spark.native): the jar compiled with
the JDK's javac into the JVM cache, none without a javac, and the session settings that load it."""

from __future__ import annotations

import os
import shutil
import zipfile

import pytest
from tablets.spark import native


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TABLETS_JVM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_settings_add_the_jar_and_the_extension_to_the_users_own(cache, monkeypatch):
    monkeypatch.setattr(native, "jar", lambda: "/c/tablets-native.jar")
    conf = native.with_extension(
        {
            "spark.driver.extraClassPath": "/a.jar",
            "spark.sql.extensions": "x.Ext",
            "spark.master": "local[2]",
        }
    )
    assert conf["spark.driver.extraClassPath"] == os.pathsep.join(["/a.jar", "/c/tablets-native.jar"])
    assert conf["spark.sql.extensions"] == "x.Ext,tablets.spark.TabletsExtensions"
    assert native.with_extension(conf) == conf  # once
    assert native.with_extension({})["spark.sql.extensions"] == native.EXTENSION


def test_no_javac_no_extension(cache, monkeypatch, tmp_path, caplog):
    """A JRE only: the session starts without the extension (plain Spark SQL keeps the Python
    source), with one log line."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # neither java nor javac
    monkeypatch.setattr(native, "_told", False)
    with caplog.at_level("INFO", logger="tablets"):
        assert native.jar() is None
        assert native.with_extension({"spark.master": "local"}) == {"spark.master": "local"}
    assert [r.message for r in caplog.records if "javac" in r.message]


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_the_jar_is_compiled_once_per_source_and_spark_version(cache):
    path = native.jar()
    assert path is not None and os.path.dirname(path) == str(cache)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert {
        "tablets/spark/NativeReads.class",
        "tablets/spark/TabletsExtensions.class",
        "tablets/spark/ReadPlanner.class",
        "tablets/spark/DeletionVectors.class",
        "tablets/spark/LiveRow.class",
    } <= names
    mtime = os.path.getmtime(path)
    assert native.jar() == path and os.path.getmtime(path) == mtime  # cached
    assert not [f for f in os.listdir(cache) if not f.endswith(".jar")]  # no work files left
