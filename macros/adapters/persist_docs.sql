{#-- persist_docs on a tablet table: the model's description and its columns' descriptions become
     the table's comments, in its log (DESCRIBE EXTENDED and dbt docs show them), in one commit
     per run (none when they are unchanged). Documented columns the table lacks are warned about
     as dbt does. Any other relation is dbt-spark's. --#}
{% macro tablets__persist_docs(relation, model, for_relation, for_columns) -%}
  {%- if not adapter.is_tablet_table(relation) -%}
    {{ return(spark__persist_docs(relation, model, for_relation, for_columns)) }}
  {%- endif -%}
  {%- set description = model.description if (for_relation and config.persist_relation_docs() and model.description) else none -%}
  {%- set columns = {} -%}
  {%- if for_columns and config.persist_column_docs() and model.columns -%}
    {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute="name") | list -%}
    {%- set documented = validate_doc_columns(relation, model.columns, existing) -%}
    {%- for name in documented if documented[name]['description'] -%}
      {%- do columns.update({name: documented[name]['description']}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if description is not none or columns -%}
    {%- do adapter.persist_tablet_docs(relation, description, columns) -%}
  {%- endif -%}
{%- endmacro %}
