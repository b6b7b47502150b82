"""One reader of on/off settings (``tablets.settings``): the same words everywhere, and a clear
error, naming the setting, for anything else."""

import pytest
from tablets.settings import BOOLEANS, InvalidSetting, conf_flag, flag
from tablets.spark import jvm
from tablets.storage.properties import CHECKS, InvalidProperty, check_properties

pytestmark = pytest.mark.unit


class _Conf:
    def __init__(self, values):
        self.values = values

    def get(self, key, default=None):
        if isinstance(self.values, Exception):
            raise self.values
        return self.values.get(key, default)


class _Spark:
    def __init__(self, values):
        self.conf = _Conf(values)


@pytest.mark.parametrize("word", ["true", "TRUE", " on ", "1", "Yes"])
def test_on_words(word):
    assert flag(word, "x", default=False) is True


@pytest.mark.parametrize("word", ["false", "False", "OFF", " 0", "no"])
def test_off_words(word):
    assert flag(word, "x", default=True) is False


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_is_the_default(value):
    assert flag(value, "x", default=True) is True
    assert flag(value, "x", default=False) is False


@pytest.mark.parametrize("word", ["of", "enabled", "2", "tru"])
def test_anything_else_names_the_setting(word):
    with pytest.raises(InvalidSetting) as e:
        flag(word, "spark.tablets.merge.skipSameSource")
    assert "spark.tablets.merge.skipSameSource" in str(e.value) and repr(word) in str(e.value)
    assert e.value.help


def test_a_shortcut_set_off_is_off():
    # the words every reader once read its own way: now one answer each
    spark = _Spark({"spark.tablets.merge.skipSameSource": "off", "spark.tablets.merge.pruneTablets": "no"})
    assert conf_flag(spark, "spark.tablets.merge.skipSameSource") is False
    assert conf_flag(spark, "spark.tablets.merge.pruneTablets") is False
    assert conf_flag(spark, "spark.tablets.merge.arrowEval") is True
    assert conf_flag(_Spark(RuntimeError("gone")), "spark.tablets.merge.arrowEval") is True
    with pytest.raises(InvalidSetting):
        conf_flag(_Spark({"spark.tablets.merge.skipNoop": "maybe"}), "spark.tablets.merge.skipNoop")


def test_the_jvm_archive_switch_reads_the_same_words(monkeypatch):
    monkeypatch.delenv(jvm.ENV, raising=False)
    assert jvm.enabled({})
    assert not jvm.enabled({jvm.CONF: "off"})
    monkeypatch.setenv(jvm.ENV, "no")
    assert not jvm.enabled({})
    monkeypatch.setenv(jvm.ENV, "sometimes")
    with pytest.raises(InvalidSetting, match=jvm.ENV):
        jvm.enabled({})


def test_boolean_table_properties_take_the_same_words():
    assert "auto_compact" in CHECKS
    for word in BOOLEANS:
        check_properties({"auto_compact": word.upper()}, [], "ALTER TABLE t")
    with pytest.raises(InvalidProperty):
        check_properties({"auto_compact": "sometimes"}, [], "ALTER TABLE t")
