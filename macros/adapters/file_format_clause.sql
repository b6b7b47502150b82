{#-- dbt-spark's USING clause of a CREATE TABLE it writes (seeds; table and incremental models of
     another format): tablets unless the model or seed names another file_format, as
     tablets_file_format says for this adapter's own materializations. --#}
{% macro tablets__file_format_clause() %}
  using {{ tablets_file_format() }}
{%- endmacro %}
