{#-- A later run: the model's SQL becomes a temporary view, schema changes are applied to the
     table (on_schema_change), and the statement rendered from the config runs on the engine as
     one commit. It is the 'main' statement, so it lands in target/run/ and its response
     (MERGE n (inserted .., updated .., deleted .., unchanged ..)) is the run's message. --#}
{% macro tablets_merge_into(cfg, target_relation, existing_relation, select_sql=none) %}
  {%- set tmp_relation = make_temp_relation(target_relation, '__dbt_tmp') -%}
  {%- call statement('create_tmp_relation') -%}
    {{ create_temporary_view(tmp_relation, compiled_code if select_sql is none else select_sql) }}
  {%- endcall -%}

  {#-- dbt's process_schema_changes already described the model's columns, unless 'ignore' --#}
  {%- set source_columns = process_schema_changes(cfg.on_schema_change, tmp_relation, existing_relation) -%}
  {%- if not source_columns -%}
    {%- set source_columns = adapter.get_columns_in_relation(tmp_relation) -%}
  {%- endif -%}
  {%- set target_columns = adapter.get_columns_in_relation(target_relation) -%}
  {%- set merge_sql = adapter.render_merge(cfg, target_relation, tmp_relation, target_columns, source_columns) -%}

  {% do tablets_run_main(cfg, merge_sql) %}

  {%- call statement('drop_tmp_relation') -%}
    drop view if exists {{ tmp_relation }}
  {%- endcall -%}
{% endmacro %}
