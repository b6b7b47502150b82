{#--
  materialized='table'. A Python model builds a tablet table (python_model.sql): its DataFrame
  becomes the table through CREATE OR REPLACE TABLE ... USING tablets AS, one engine statement,
  with the table options of a SQL table model (target_tablet_rows, cluster_by, tblproperties).
  A SQL model with file_format='tablets' (the default: tablets_file_format) rebuilds an existing
  tablet table the same way (tablets_table_sql): one commit on the table, so a failed query
  leaves it as it was, its history kept. Another file_format is dbt-spark's table
  materialization, unchanged.
--#}
{% materialization table, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {% do tablets_check_grants() %}
  {%- if model['language'] != 'python' -%}
    {%- if tablets_file_format() == 'tablets' -%}
      {{ return(tablets_table_sql()) }}
    {%- endif -%}
    {{ return(materialization_table_spark()) }}
  {%- endif -%}
  {% do tablets_python_check('table') %}
  {%- set cfg = adapter.table_config(model.config, model.name) -%}
  {{ run_hooks(pre_hooks) }}
  {#-- here, not in a macro: dbt submits Python only from the materialization's own statement --#}
  {%- call statement('python_model', language='python') -%}
    {{ tablets_python_script(compiled_code) }}
  {%- endcall -%}
  {{ return(tablets_python_table(cfg)) }}
{%- endmaterialization %}


{#-- dbt-spark's table materialization, but a tablet table is never dropped first: its rebuild is
     CREATE OR REPLACE TABLE ... AS, one commit of its log (Delta's way). Another kind of relation
     (a view, a Parquet table) is dropped first, as dbt-spark does. --#}
{% macro tablets_table_sql() %}
  {%- set identifier = model['alias'] -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema, database=database, type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {%- if old_relation is not none and not adapter.is_tablet_table(old_relation) -%}
    {{ adapter.drop_relation(old_relation) }}
  {%- endif -%}
  {%- set cfg = adapter.table_config(model.config, model.name) -%}
  {% do tablets_run_main(cfg, tablets_create_table_as_sql(target_relation, compiled_code, cfg.table_properties())) %}
  {% set should_revoke = should_revoke(old_relation, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {% do persist_constraints(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmacro %}
