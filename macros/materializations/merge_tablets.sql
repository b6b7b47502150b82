{#--
  materialized='merge_tablets': a tablet table, created on the first run (and on --full-refresh),
  then MERGEd into on every later run: one engine commit per run.

  The config is validated before any SQL runs (every problem in one error); the statement is
  decided in Python (dbt/adapters/tablets/config.py) and written to target/run/ like any model.
  A Python model's DataFrame is the MERGE source (python_model.sql).
--#}
{% materialization merge_tablets, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {% do tablets_check_grants() %}
  {%- set cfg = tablets_merge_config('merge_tablets') -%}
  {%- if model['language'] == 'python' -%}
    {% do tablets_python_check('merge_tablets') %}
    {{ run_hooks(pre_hooks) }}
    {#-- here, not in a macro: dbt submits Python only from the materialization's own statement --#}
    {%- call statement('python_model', language='python') -%}
      {{ tablets_python_script(compiled_code) }}
    {%- endcall -%}
    {{ return(tablets_python_materialize(cfg)) }}
  {%- endif -%}
  {{ return(tablets_materialize(cfg)) }}
{%- endmaterialization %}
