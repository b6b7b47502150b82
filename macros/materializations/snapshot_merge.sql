{#-- The snapshot MERGE on a tablet table: dbt-spark's statement (close the current version of
     changed and deleted rows, insert the new versions), with the inserted columns named and
     read from the staging relation (columns the source no longer has are NULL in new rows), and
     every name quoted (snapshot_meta_column_names may be any case). The engine runs it as one
     commit. Any other table gets dbt-spark's statement. --#}
{% macro tablets__snapshot_merge_sql(target, source, insert_cols) -%}
  {%- if not adapter.is_tablet_table(target) -%}
    {{ spark__snapshot_merge_sql(target, source, insert_cols) }}
  {%- else -%}
    {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
    {%- set scd_id = adapter.quote(columns.dbt_scd_id) -%}
    {%- set valid_to = adapter.quote(columns.dbt_valid_to) -%}
    {%- set valid_to_current = config.get('dbt_valid_to_current') %}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on DBT_INTERNAL_SOURCE.{{ scd_id }} = DBT_INTERNAL_DEST.{{ scd_id }}
    when matched
      {%- if valid_to_current %}
      and (DBT_INTERNAL_DEST.{{ valid_to }} = {{ valid_to_current }} or DBT_INTERNAL_DEST.{{ valid_to }} is null)
      {%- else %}
      and DBT_INTERNAL_DEST.{{ valid_to }} is null
      {%- endif %}
      and DBT_INTERNAL_SOURCE.dbt_change_type in ('update', 'delete')
      then update set {{ valid_to }} = DBT_INTERNAL_SOURCE.{{ valid_to }}
    when not matched
      and DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
      then insert ({{ insert_cols | join(', ') }})
      values ({% for col in insert_cols %}DBT_INTERNAL_SOURCE.{{ col }}{{ ', ' if not loop.last }}{% endfor %})
  {%- endif -%}
{%- endmacro %}
