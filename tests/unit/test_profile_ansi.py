"""The profile's ``ansi`` (default true) wins over dbt-spark's forced ``spark.sql.ansi.enabled =
false``; an explicit ``server_side_parameters`` entry is the user's choice and kept."""

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.tablets.connections import TabletsCredentials

pytestmark = pytest.mark.unit
ANSI = "spark.sql.ansi.enabled"


def _creds(**kw):
    return TabletsCredentials(schema="s", database=None, **kw)


def test_ansi_is_on_by_default():
    assert _creds().server_side_parameters[ANSI] == "true"


def test_the_profile_opts_out():
    assert _creds(ansi=False).server_side_parameters[ANSI] == "false"


def test_an_explicit_spark_setting_is_kept():
    assert _creds(server_side_parameters={ANSI: "False"}).server_side_parameters[ANSI] == "false"
    assert _creds(ansi=False, server_side_parameters={ANSI: "true"}).server_side_parameters[ANSI] == "true"


def test_a_bad_value_is_named():
    with pytest.raises(DbtRuntimeError, match=r"`ansi` is true or false, not 'yes'"):
        _creds(ansi="yes")
