{#-- A model's own statement (dbt's statement('main')): written to target/run/, then run by the
     engine with the model's options as a value (adapter.run_statement, through dbt's add_query,
     not text in the SQL); its response is the run's message. --#}
{% macro tablets_run_main(cfg, sql) %}
  {%- if execute -%}
    {{ log('Writing runtime sql for node "{}"'.format(model['unique_id'])) }}
    {{ write(sql) }}
    {%- set response = adapter.run_statement(cfg, sql) -%}
    {{ store_result('main', response=response) }}
  {%- endif -%}
{% endmacro %}
