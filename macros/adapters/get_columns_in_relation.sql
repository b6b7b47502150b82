{#-- dbt's get_columns_in_relation() macro returns Columns (dbt-core's contract, as
     sql_convert_columns_in_relation builds them); dbt-spark's returns DESCRIBE's raw rows, whose
     `.name` is undefined, so the deletion records of snapshots with hard_deletes='new_record'
     came out with every source column NULL (databricks/dbt-databricks#1176). --#}
{% macro tablets__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
