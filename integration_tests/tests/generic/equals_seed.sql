{#- Rows of `model` and `compare_to` must be equal as multisets (over compare_to's columns). -#}
{% test equals_seed(model, compare_to) %}
{%- set cols = adapter.get_columns_in_relation(compare_to) | map(attribute='name') | join(', ') -%}
with a as (select {{ cols }} from {{ model }}),
     b as (select {{ cols }} from {{ compare_to }}),
     a_not_b as (select * from a except all select * from b),
     b_not_a as (select * from b except all select * from a)
select 'unexpected' as side, * from a_not_b
union all
select 'missing' as side, * from b_not_a
{% endtest %}
