-- Seed 004, EXAMPLE 1: insert the new keys whose b < 11, transformed (6 rows).
{{ config(
    unique_key='a',
    when_not_matched=[{'condition': 's.b < 11', 'action': 'insert', 'values': ['s.a', '100 * s.b']}],
) }}
{% if is_incremental() %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 5)
{% else %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 10)
{% endif %}
