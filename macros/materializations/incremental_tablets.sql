{#--
  materialized='incremental' with file_format='tablets': dbt's standard keys (unique_key,
  incremental_strategy merge | append | insert_overwrite, merge_update_columns,
  merge_exclude_columns, incremental_predicates, on_schema_change) on a tablet table, run by the
  same engine as merge_tablets, with dbt's aliases DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST.
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
