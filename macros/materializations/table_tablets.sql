{#--
  materialized='table'. A Python model builds a tablet table (python_model.sql): its DataFrame
  becomes the table through CREATE OR REPLACE TABLE ... USING tablets AS, one engine statement,
  with the table options of a SQL table model (target_tablet_rows, cluster_by, tblproperties).
  A SQL model is dbt-spark's table materialization, unchanged (file_format='tablets' reaches
  tablets__create_table_as).
--#}
{% materialization table, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {%- if model['language'] != 'python' -%}
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
