{#--
  Python models (def model(dbt, session)) on tablet tables: table, incremental, merge_tablets.

  The materialization itself runs the model with a 'python' statement (dbt-core lets only a
  materialization's own statement submit Python): adapter.submit_python_job runs the code in the
  dbt process on the profile's Spark session and registers the frame it returns as the temporary
  view tablets_python_view() names (dbt/adapters/tablets/python_models.py). The SQL path of the
  materialization then reads `select * from <view>`: CREATE TABLE AS, MERGE, INSERT, one commit.
--#}

{% macro tablets_python_view() -%}
  {{ return(adapter.quote(this.identifier ~ '__dbt_python')) }}
{%- endmacro %}


{#-- The code submitted: the compiled model (dbt's postfix included) and the view to fill. --#}
{% macro tablets_python_script(compiled_code) -%}
{{ compiled_code }}

# --- dbt-tablets ---
# Run in the dbt process on the profile's Spark session (also the global `spark`):
# frame = model(dbtObj(<reads of the relation>), session), registered as this temporary view.
dbt_tablets_view = {{ tojson(tablets_python_view()) }}
{%- endmacro %}


{#-- The hint at the end of dbt's py_script_postfix (dbt-spark's speaks of Databricks notebooks).
     The postfix is compiled for every Python model, ephemeral ones too (dbt would paste their code
     into the SQL that refs them as a CTE): the one place to refuse those. --#}
{% macro py_script_comment() %}
{%- if model is mapping and model.get('config', {}).get('materialized') == 'ephemeral' -%}
  {{ exceptions.raise_compiler_error(
      "Python model '" ~ model.name ~ "': materialized='ephemeral' is not supported for Python models "
      ~ "(an ephemeral model is SQL pasted into the models that ref it).\n"
      ~ "Help: use materialized='table', 'incremental' or 'merge_tablets'.") }}
{%- endif %}
# To run the model in a pyspark shell: dbt = dbtObj(spark.table); df = model(dbt, spark)
{% endmacro %}


{#-- What a Python model cannot do here, refused before it runs. --#}
{% macro tablets_python_check(materialization) %}
  {%- set file_format = config.get('file_format') -%}
  {%- if file_format not in (none, 'tablets') -%}
    {{ exceptions.raise_compiler_error(
        "Python model '" ~ model.name ~ "': file_format = '" ~ file_format ~ "' is not supported for Python models "
        ~ "(materialized='" ~ materialization ~ "'); dbt-tablets writes them as tablet tables.\n"
        ~ "Help: remove file_format from the model's config (or set it to tablets), or make it a SQL model.") }}
  {%- endif -%}
  {%- if config.get('incremental_strategy') == 'microbatch' -%}
    {{ exceptions.raise_compiler_error(
        "Python model '" ~ model.name ~ "': incremental_strategy = 'microbatch' is not supported for Python models: "
        ~ "dbt.ref() and dbt.source() do not filter their inputs to the batch's event_time window.\n"
        ~ "Help: use incremental_strategy 'merge' (with unique_key), 'delete+insert' or 'insert_overwrite' "
        ~ "with replace_where, or make it a SQL model.") }}
  {%- endif -%}
{% endmacro %}


{#-- incremental and merge_tablets: the shared tablet-table body, reading the view. --#}
{% macro tablets_python_materialize(cfg) %}
  {%- set view = tablets_python_view() -%}
  {%- set result = tablets_materialize(cfg, select_sql='select * from ' ~ view, hooks=false) -%}
  {% do tablets_drop_python_view(view) %}
  {{ run_hooks(post_hooks) }}
  {{ return(result) }}
{% endmacro %}


{#-- table: CREATE OR REPLACE TABLE ... USING tablets AS the view (a view or an ordinary table of
     that name is dropped first). --#}
{% macro tablets_python_table(cfg) %}
  {%- set view = tablets_python_view() -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- if existing_relation is not none and not adapter.is_tablet_table(existing_relation) -%}
    {% do adapter.drop_relation(existing_relation) %}
  {%- endif -%}
  {%- set sql = tablets_create_table_as_sql(target_relation, 'select * from ' ~ view, cfg.table_properties()) -%}
  {% do tablets_run_main(cfg, sql) %}
  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, config.get('grants'), should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {% do tablets_drop_python_view(view) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmacro %}


{% macro tablets_drop_python_view(view) %}
  {%- call statement('drop_python_view') -%}
    drop view if exists {{ view }}
  {%- endcall -%}
{% endmacro %}
