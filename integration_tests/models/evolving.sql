-- A schema change between runs: the second run adds `loud`; older rows read it as NULL.
{{ config(unique_key='id', on_schema_change='append_new_columns') }}
{% if var('phase') == 1 %}
select id, value from {{ ref('kv') }} where phase = 1
{% else %}
select id, value, upper(value) as loud from {{ ref('kv') }} where phase = {{ var('phase') }}
{% endif %}
