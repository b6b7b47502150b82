{#--
  materialized='incremental' with file_format='tablets' (the default: tablets_file_format): dbt's standard keys (unique_key,
  incremental_strategy merge | delete+insert | append | insert_overwrite [replace_where] |
  microbatch, merge_update_columns, merge_exclude_columns, incremental_predicates,
  on_schema_change) on a tablet table, run by the same engine as merge_tablets, with dbt's
  aliases DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST. Every later run is one statement, one commit;
  render.py writes it (delete+insert and replace_where as one MERGE each).
  microbatch: dbt-core calls this materialization once per batch, with the batch's bounds in
  model.config (__dbt_internal_microbatch_event_time_start / _end) and its inputs filtered to
  them; the config turns the bounds into the window the batch's MERGE replaces. The first batch
  of a new table (or of --full-refresh) creates it from the batch's rows.
  Another file_format (parquet, delta, ...) is dbt-spark's incremental materialization, unchanged.
  Python models write tablet tables whatever the file_format default (python_model.sql).
--#}
{% materialization incremental, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {% do tablets_check_grants() %}
  {%- if model['language'] == 'python' -%}
    {% do tablets_python_check('incremental') %}
    {%- set cfg = tablets_merge_config('incremental') -%}
    {{ run_hooks(pre_hooks) }}
    {#-- here, not in a macro: dbt submits Python only from the materialization's own statement --#}
    {%- call statement('python_model', language='python') -%}
      {{ tablets_python_script(compiled_code) }}
    {%- endcall -%}
    {{ return(tablets_python_materialize(cfg)) }}
  {%- endif -%}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(materialization_incremental_spark()) }}
  {%- endif -%}
  {%- set cfg = tablets_merge_config('incremental') -%}
  {{ return(tablets_materialize(cfg)) }}
{%- endmaterialization %}
