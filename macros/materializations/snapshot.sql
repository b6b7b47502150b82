{#--
  dbt snapshots on tablet tables, the default file_format of this adapter's snapshots.

  dbt-core's snapshot materialization (strategies timestamp and check, hard_deletes ignore /
  invalidate / new_record, dbt_valid_to_current, snapshot_meta_column_names), with:
  - the first run creating the table USING tablets (CREATE TABLE ... AS, one engine commit);
  - later runs staging the changes in a view (dbt-spark's), adding new source columns with
    ALTER TABLE ... ADD COLUMNS (the engine's schema evolution: older tablets read them as NULL)
    and running the snapshot MERGE on the engine as one commit (its message is the run's).
  The table has no key columns: a snapshot keeps several rows per unique_key.
  file_format delta, iceberg or hudi is dbt-spark's snapshot materialization, unchanged.
--#}
{% materialization snapshot, adapter='tablets' %}
  {% do tablets_check_grants() %}
  {%- if tablets_file_format() != 'tablets' -%}
    {{ return(materialization_snapshot_spark()) }}
  {%- endif -%}
  {%- set cfg = adapter.snapshot_config(model.config, model.name) -%}

  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set unique_key = config.get('unique_key') -%}
  {%- set grant_config = config.get('grants') -%}

  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none,
          schema=model.schema,
          identifier=target_table,
          type='table') -%}

  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}
  {%- if target_relation_exists and not adapter.is_tablet_table(target_relation) -%}
    {% do exceptions.raise_compiler_error(
        "Snapshot '" ~ model.name ~ "': the existing table " ~ target_relation ~ " is not a tablet table. "
        ~ "A snapshot's table holds its history, so dbt-tablets does not replace it.\n"
        ~ "Help: copy it into a tablet table (CREATE TABLE <new> USING tablets AS SELECT * FROM "
        ~ target_relation ~ ", then swap the names), or set file_format to its format (delta, iceberg, hudi) "
        ~ "to keep dbt-spark's snapshot.") %}
  {%- endif -%}

  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}

  {% if not target_relation_exists %}
      {% set build_or_select_sql = build_snapshot_table(strategy, model['compiled_code']) %}
      {% set final_sql = tablets_create_table_as_sql(target_relation, build_or_select_sql, cfg.table_properties()) %}
  {% else %}
      {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}
      {{ adapter.assert_valid_snapshot_target_given_strategy(target_relation, columns, strategy) }}

      {% set build_or_select_sql = snapshot_staging_table(strategy, sql, target_relation) %}
      {#-- a view, not a temporary one: its columns are read with DESCRIBE --#}
      {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}

      {% set remove_columns = ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'] %}
      {% if unique_key | is_list %}
          {% for key in strategy.unique_key %}
              {% do remove_columns.append('dbt_unique_key_' + loop.index|string) %}
              {% do remove_columns.append('DBT_UNIQUE_KEY_' + loop.index|string) %}
          {% endfor %}
      {% endif %}

      {% set missing_columns = adapter.get_missing_columns(staging_table, target_relation)
                                   | rejectattr('name', 'in', remove_columns)
                                   | list %}
      {% do create_columns(target_relation, missing_columns) %}

      {% set source_columns = adapter.get_columns_in_relation(staging_table)
                                   | rejectattr('name', 'in', remove_columns)
                                   | list %}
      {% set quoted_source_columns = [] %}
      {% for column in source_columns %}
          {% do quoted_source_columns.append(adapter.quote(column.name)) %}
      {% endfor %}
      {% set final_sql = snapshot_merge_sql(
            target=target_relation, source=staging_table, insert_cols=quoted_source_columns) %}
  {% endif %}

  {{ check_time_data_types(build_or_select_sql) }}

  {% do tablets_run_main(cfg, final_sql) %}

  {% set should_revoke = should_revoke(target_relation_exists, full_refresh_mode=False) %}
  {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}

  {% if staging_table is defined %}
      {% do post_snapshot(staging_table) %}
  {% endif %}

  {{ run_hooks(post_hooks, inside_transaction=False) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
