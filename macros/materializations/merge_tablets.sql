{#--
  materialized='merge_tablets': a tablet table, created on the first run (and on --full-refresh),
  then MERGEd into on every later run: one engine commit per run.

  The config is validated before any SQL runs (every problem in one error); the statement is
  decided in Python (dbt/adapters/tablets/config.py) and written to target/run/ like any model.
--#}
{% materialization merge_tablets, adapter='tablets', supported_languages=['sql'] -%}
  {%- set cfg = tablets_merge_config('merge_tablets') -%}
  {{ return(tablets_materialize(cfg)) }}
{%- endmaterialization %}
