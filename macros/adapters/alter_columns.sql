{#-- on_schema_change on a tablet table is the store's schema evolution: added columns read as
     NULL in older tablets, dropped columns are no longer read, type changes are casts. --#}
{% macro tablets__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
  {%- if adapter.is_tablet_table(relation) -%}
    {% do adapter.alter_tablet_columns(relation, add_columns, remove_columns) %}
  {%- else -%}
    {% do spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
  {%- endif -%}
{% endmacro %}


{% macro tablets__alter_column_type(relation, column_name, new_column_type) -%}
  {%- if adapter.is_tablet_table(relation) -%}
    {% do adapter.alter_tablet_column_type(relation, column_name, new_column_type) %}
  {%- else -%}
    {{ spark__alter_column_type(relation, column_name, new_column_type) }}
  {%- endif -%}
{%- endmacro %}
