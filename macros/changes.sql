{#-- {{ tablets_changes(ref('orders')) }}: the FROM item of an incremental model that reads its
     upstream tablet table's changes since the version it last consumed (table_changes: the
     table's columns, _change_type, _commit_version, _commit_timestamp). The first run and
     --full-refresh read the whole table, every row an 'insert'. The version read is recorded
     in the model's own commit, so each change is taken exactly once, also across a failed run
     and its retry (dbt/adapters/tablets/changes.py). --#}
{% macro tablets_changes(upstream) -%}
  {%- if execute -%}
    {{- return(adapter.tablets_changes_sql(model.name, upstream, this, should_full_refresh())) -}}
  {%- else -%}
    {{- return("(select * from " ~ upstream ~ ")") -}}
  {%- endif -%}
{%- endmacro %}
