{#-- The config validation entry: the model's whole config, checked once, in Python, before any
     SQL runs. Raises one error naming the model and every bad key, its value, the allowed
     values and the fix. --#}
{% macro tablets_merge_config(materialization='merge_tablets') %}
  {{ return(adapter.merge_config(model.config, model.name, materialization)) }}
{% endmacro %}
