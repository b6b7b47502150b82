{#-- CREATE OR REPLACE TABLE ... USING tablets AS <model SQL>: the engine creates the tablet
     table and loads it in one commit (Spark's own CTAS would append to a Python source).
     An enforced contract's not_null and check constraints are the table's own, declared here
     in its column list so the rows are checked in that commit; its primary_key is the table's
     key (adapter.contract_ddl, contracts.py). --#}
{% macro tablets_create_table_as_sql(relation, compiled_code, properties={}) -%}
  {%- set contract_config = config.get('contract') -%}
  {%- set columns_ddl = '' -%}
  {%- if contract_config and contract_config.enforced -%}
    {{ get_assert_columns_equivalent(compiled_code) }}
    {%- set compiled_code = get_select_subquery(compiled_code) %}
    {%- set columns_ddl, properties = adapter.contract_ddl(model, properties) -%}
  {%- endif %}
  create or replace table {{ relation }} {{ columns_ddl }}
  using tablets
  {%- if properties %}
  tblproperties (
    {%- for key, value in properties.items() -%}
      '{{ key | replace("\\", "\\\\") | replace("'", "\\'") }}' = '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}'{% if not loop.last %}, {% endif %}
    {%- endfor -%}
  )
  {%- endif %}
  {{ location_clause() }}
  as
  {{ compiled_code }}
{%- endmacro %}


{#-- table (and dbt-spark's incremental, seeds) with file_format='tablets' create tablet tables,
     with the model's table options (target_tablet_rows, cluster_by, tblproperties), validated;
     everything else is dbt-spark's create_table_as. The materializations run it with their
     engine options (tablets_run_main); another caller runs it with the profile's. --#}
{% macro tablets__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if not temporary and language == 'sql' and tablets_file_format() == 'tablets' -%}
    {%- set cfg = adapter.table_config(model.config, model.name) -%}
    {{ tablets_create_table_as_sql(relation, compiled_code, cfg.table_properties()) }}
  {%- else -%}
    {{ spark__create_table_as(temporary, relation, compiled_code, language) }}
  {%- endif -%}
{%- endmacro %}
