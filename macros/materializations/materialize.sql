{#-- The body shared by merge_tablets and incremental on a tablet table: create (first run,
     --full-refresh, or the relation is not a tablet table yet) or merge into the table.
     A Python model gives the query of its frame's view (select_sql) and runs the hooks itself. --#}
{% macro tablets_materialize(cfg, select_sql=none, hooks=true) %}
  {%- set select_sql = compiled_code if select_sql is none else select_sql -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set existing_is_tablets = adapter.is_tablet_table(existing_relation) -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set grant_config = config.get('grants') -%}

  {%- if hooks -%}
    {{ run_hooks(pre_hooks) }}
  {%- endif -%}

  {%- if existing_relation is none or full_refresh or not existing_is_tablets -%}
    {%- if existing_relation is not none and not existing_is_tablets -%}
      {{ log("tablets: " ~ existing_relation ~ " is a " ~ existing_relation.type ~ ", not a tablet table: replacing it") }}
      {% do adapter.drop_relation(existing_relation) %}
    {%- endif -%}
    {%- set create_sql = tablets_create_table_as_sql(target_relation, select_sql, cfg.table_properties()) -%}
    {% do tablets_run_main(cfg, create_sql) %}
  {%- else -%}
    {#-- an enforced contract's constraints, made the existing table's before its merge --#}
    {% do adapter.sync_contract(model, target_relation) %}
    {#-- a table another materialization built: the unique_key becomes its key (rows checked) --#}
    {% do adapter.adopt_key(cfg, target_relation) %}
    {% do tablets_merge_into(cfg, target_relation, existing_relation, select_sql) %}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=full_refresh) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {%- if hooks -%}
    {{ run_hooks(post_hooks) }}
  {%- endif -%}

  {{ return({'relations': [target_relation]}) }}
{% endmacro %}
