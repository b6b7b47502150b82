{#-- materialized='view': dbt-spark's. A Python model's result is a DataFrame in the dbt process,
     which no view can hold: refused with what to use instead (dbt-core's own refusal names
     neither the model nor a fix). --#}
{% materialization view, adapter='tablets', supported_languages=['sql', 'python'] -%}
  {% do tablets_check_grants() %}
  {%- if model['language'] == 'python' -%}
    {{ exceptions.raise_compiler_error(
        "Python model '" ~ model.name ~ "': materialized='view' is not supported for Python models "
        ~ "(a view is a SQL query; the model's DataFrame exists only while dbt runs).\n"
        ~ "Help: use materialized='table', 'incremental' or 'merge_tablets'.") }}
  {%- endif -%}
  {{ return(materialization_view_spark()) }}
{%- endmaterialization %}
