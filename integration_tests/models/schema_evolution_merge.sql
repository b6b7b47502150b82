-- merge_with_schema_evolution (dbt-databricks' key): the second run's MERGE brings the new column
-- `loud` and widens `n` (int -> bigint) in its own commit; older rows read `loud` as NULL.
{{ config(unique_key='id', merge_with_schema_evolution=true) }}
{% if var('phase') == 1 %}
select id, value, cast(id as int) as n from {{ ref('kv') }} where phase = 1
{% else %}
select id, value, cast(id as bigint) * 10000000000 as n, upper(value) as loud from {{ ref('kv') }} where phase = 2
{% endif %}
