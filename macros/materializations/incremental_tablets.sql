{#--
  materialized='incremental' with file_format='tablets': dbt's standard keys (unique_key,
  incremental_strategy merge | delete+insert | append | insert_overwrite [replace_where] |
  microbatch, merge_update_columns, merge_exclude_columns, incremental_predicates,
  on_schema_change) on a tablet table, run by the same engine as merge_tablets, with dbt's
  aliases DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST. Every later run is one statement, one commit;
  render.py writes it (delete+insert and replace_where as one MERGE each).
  microbatch: dbt-core calls this materialization once per batch, with the batch's bounds in
  model.config (__dbt_internal_microbatch_event_time_start / _end) and its inputs filtered to
  them; the config turns the bounds into the window the batch's MERGE replaces. The first batch
  of a new table (or of --full-refresh) creates it from the batch's rows.
  Any other file_format is dbt-spark's incremental materialization, unchanged.
--#}
{% materialization incremental, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {%- if config.get('file_format') != 'tablets' -%}
    {{ return(materialization_incremental_spark()) }}
  {%- endif -%}
  {%- if model['language'] != 'sql' -%}
    {{ exceptions.raise_compiler_error(
        "Model '" ~ model.name ~ "': Python models cannot write tablet tables yet (file_format='tablets').\n"
        ~ "Help: make it a SQL model, or use another file_format.") }}
  {%- endif -%}
  {%- set cfg = tablets_merge_config('incremental') -%}
  {{ return(tablets_materialize(cfg)) }}
{%- endmaterialization %}
