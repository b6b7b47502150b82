{#-- A seed of tablet tables (file_format tablets, the default) loads in one commit: CREATE OR
     REPLACE TABLE ... AS SELECT of every row (tablets__create_table_as, with the seed's table
     options), so a load that fails leaves the table, its rows and its history as they were, and
     a seed run again is a new version of the same table. dbt-spark drops the table first and
     inserts the rows a batch at a time (get_batch_size): a failure left no table, or part of the
     rows. Each value is cast to its column's type on its own, as dbt-spark's INSERTs cast it.
     Another file_format is dbt-spark's seed, unchanged. --#}
{% macro tablets__create_csv_table(model, agate_table) %}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(spark__create_csv_table(model, agate_table)) }}
  {%- endif -%}
  {{ return(tablets_load_seed(model, agate_table)) }}
{% endmacro %}


{% macro tablets__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
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


{% macro tablets_load_seed(model, agate_table) %}
  {%- set column_override = model['config'].get('column_types', {}) -%}
  {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
  {%- set marker = '__tablets_binding__' -%}
  {%- set columns = [] -%}
  {%- for col_name in agate_table.column_names -%}
    {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
    {%- do columns.append((adapter.quote_seed_column(col_name | string, quote_seed_column), type)) -%}
  {%- endfor -%}
  {%- set bindings = [] -%}
  {%- for row in agate_table.rows -%}
    {%- do bindings.extend(row) -%}
  {%- endfor -%}
  {%- set select -%}
    {%- if agate_table.rows | length == 0 -%}
      select {% for name, type in columns -%}
        cast(null as {{ type }}) as {{ name }}{% if not loop.last %}, {% endif %}
      {%- endfor %} where false
    {%- else -%}
      select {% for name, type in columns -%}
        c{{ loop.index0 }} as {{ name }}{% if not loop.last %}, {% endif %}
      {%- endfor %} from values
      {% for row in agate_table.rows -%}
        ({%- for name, type in columns -%}
          cast({{ marker }} as {{ type }}){% if not loop.last %}, {% endif %}
        {%- endfor -%}){% if not loop.last %},{% endif %}
      {% endfor -%}
      as v({% for c in columns %}c{{ loop.index0 }}{% if not loop.last %}, {% endif %}{% endfor %})
    {%- endif -%}
  {%- endset -%}
  {%- set sql = tablets__create_table_as(False, this, select, 'sql') -%}
  {%- if bindings -%}
    {#-- the cursor formats the bindings in with Python's %: a % of the statement's own is doubled --#}
    {%- set sql = sql | replace('%', '%%') | replace(marker, get_binding_char()) -%}
    {% do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) %}
  {%- else -%}
    {% call statement('_') -%}
      {{ sql }}
    {%- endcall %}
  {%- endif -%}
  {{ return(sql) }}
{% endmacro %}
