{#-- A seed of tablet tables (file_format tablets, the default) loads in one commit: CREATE OR
     REPLACE TABLE ... AS SELECT of every row (tablets__create_table_as, with the seed's table
     options), so a load that fails leaves the table, its rows and its history as they were, and
     a seed run again is a new version of the same table. dbt-spark drops the table first and
     inserts the rows a batch at a time (get_batch_size): a failure left no table, or part of the
     rows. Each value's text is cast to its column's type, as dbt-spark's INSERTs cast their
     literals (seeds.py: numbers keep every digit). Another file_format is dbt-spark's seed,
     unchanged. --#}
{% macro tablets__create_csv_table(model, agate_table) %}
  {% do tablets_check_grants() %}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(spark__create_csv_table(model, agate_table)) }}
  {%- endif -%}
  {{ return(tablets_load_seed(model, agate_table)) }}
{% endmacro %}


{% macro tablets__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
  {% do tablets_check_grants() %}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(spark__reset_csv_table(model, full_refresh, old_relation, agate_table)) }}
  {%- endif -%}
  {%- if not adapter.is_tablet_table(old_relation) -%}
    {{ adapter.drop_relation(old_relation) }}
  {%- endif -%}
  {{ return(tablets_load_seed(model, agate_table)) }}
{% endmacro %}


{#-- the rows went in with the table (tablets_load_seed) --#}
{% macro tablets__load_csv_rows(model, agate_table) %}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(spark__load_csv_rows(model, agate_table)) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}


{#-- the rows travel as data (adapter.load_seed: a temp view of their text, seeds.py), not as
     SQL: a statement of thousands of rows of literals took a minute to parse and plan --#}
{% macro tablets_load_seed(model, agate_table) %}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
  {%- set select -%}
    select {% for col_name in agate_table.column_names -%}
      {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
      cast(c{{ loop.index0 }} as {{ type }}) as {{ adapter.quote_seed_column(col_name | string, quote_seed_column) }}
      {%- if not loop.last %}, {% endif %}
    {%- endfor %} from __tablets_seed_rows__ {#- seeds.ROWS: adapter.load_seed names the view -#}
  {%- endset -%}
  {%- set cfg = adapter.table_config(model.config, model.name) -%}
  {%- set sql = tablets_create_table_as_sql(this, select, cfg.table_properties()) -%}
  {% do adapter.load_seed(cfg, sql, agate_table) %}
  {{ return(sql) }}
{% endmacro %}
