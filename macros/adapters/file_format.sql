{#-- The file_format of a table, incremental or snapshot model of this adapter: tablets unless the
     model names another (parquet, delta, ...: dbt-spark's materializations, unchanged). dbt-spark
     leaves it unset (a Hive table), and its incremental refuses that for the merge strategy. --#}
{% macro tablets_file_format() -%}
  {{ return(config.get('file_format') or 'tablets') }}
{%- endmacro %}
