{#-- DROP SCHEMA ... CASCADE never reaches a Python data source: drop the schema's tablet tables
     (catalog entry, data, registry) first, then the schema. --#}
{% macro tablets__drop_schema(relation) -%}
  {% do adapter.drop_tablet_tables_in_schema(relation) %}
  {{ spark__drop_schema(relation) }}
{%- endmacro %}
