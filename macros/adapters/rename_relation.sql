{#-- A tablet table's catalog entry and registry are renamed together (its data stays put);
     Spark's ALTER TABLE ... RENAME alone would leave the table unreadable. --#}
{% macro tablets__rename_relation(from_relation, to_relation) -%}
  {%- if adapter.is_tablet_table(from_relation) -%}
    {% do adapter.rename_tablet_table(from_relation, to_relation) %}
  {%- else -%}
    {{ spark__rename_relation(from_relation, to_relation) }}
  {%- endif -%}
{%- endmacro %}
