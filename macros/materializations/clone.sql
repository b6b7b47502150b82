{#-- dbt clone: a tablet table is cloned by SHALLOW CLONE (no file copied; the clone then lives
     its own life, and VACUUM or DROP of either never deletes a file the other reads: see
     docs/FORMAT.md, "Shallow clones"). Anything else (a view, a Parquet table) becomes a view of
     the deferred relation, as dbt-core does where a table cannot be cloned (dbt-databricks clones
     only Delta tables). dbt-spark's clone materialization refuses every file_format but delta. --#}
{% macro tablets__can_clone_table() %}
  {{ return(True) }}
{% endmacro %}

{% macro tablets__create_or_replace_clone(this_relation, defer_relation) %}
  create or replace table {{ this_relation }} shallow clone {{ defer_relation }}
{% endmacro %}

{%- materialization clone, adapter='tablets' -%}
  {% do tablets_check_grants() %}
  {%- set relations = {'relations': []} -%}
  {%- if not defer_relation -%}
    {{ log("No relation found in state manifest for " ~ model.unique_id, info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation and not flags.FULL_REFRESH -%}
    {{ log("Relation " ~ existing_relation ~ " already exists", info=True) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- if this.schema == defer_relation.schema and this.identifier == defer_relation.identifier -%}
    {{ log("Target relation and defer relation are the same, skipping clone for relation: " ~ this) }}
    {{ return(relations) }}
  {%- endif -%}

  {%- set other_existing_relation = load_cached_relation(defer_relation) -%}
  {%- set grant_config = config.get('grants') -%}
  {%- if other_existing_relation and other_existing_relation.type == 'table'
        and can_clone_table() and adapter.is_tablet_table(other_existing_relation) -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- if existing_relation is not none and not adapter.is_tablet_table(existing_relation) -%}
      {{ log("Dropping relation " ~ existing_relation ~ " because it is not a tablet table (" ~ existing_relation.type ~ ")") }}
      {{ drop_relation_if_exists(existing_relation) }}
    {%- endif -%}
    {% call statement('main') %}
      {{ create_or_replace_clone(target_relation, defer_relation) }}
    {% endcall %}
    {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=True) %}
    {% do apply_grants(target_relation, grant_config, should_revoke=should_revoke) %}
    {% do persist_docs(target_relation, model) %}
    {{ return({'relations': [target_relation]}) }}
  {%- else -%}
    {%- set search_name = "materialization_view_" ~ adapter.type() -%}
    {%- if not search_name in context -%}
      {%- set search_name = "materialization_view_default" -%}
    {%- endif -%}
    {{ return(context[search_name]()) }}
  {%- endif -%}
{%- endmaterialization -%}
