{#-- The main job's phase 1 starts without history, as `run --full-refresh` does for models (dbt
     snapshot has no --full-refresh): `dbt run-operation drop_snapshots` drops the project's
     snapshot tables. --#}
{% macro drop_snapshots() %}
  {%- for node in graph.nodes.values() if node.resource_type == 'snapshot' -%}
    {%- set relation = adapter.get_relation(node.database, node.schema, node.alias) -%}
    {%- if relation is not none -%}
      {{ log("dropping " ~ relation ~ " (a fresh start for phase 1)", info=true) }}
      {% do adapter.drop_relation(relation) %}
    {%- endif -%}
  {%- endfor -%}
{% endmacro %}
