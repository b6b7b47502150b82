-- Seed 004, EXAMPLE 3: the full sync (insert, delete by source, update): a FULL OUTER join.
{{ config(
    unique_key='a',
    when_not_matched=[{'action': 'insert', 'values': ['s.a', 's.b']}],
    when_not_matched_by_source=[{'action': 'delete'}],
    when_matched=[{'action': 'update', 'set': {'b': 's.b'}}],
) }}
{% if is_incremental() %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 5)
{% else %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 10)
{% endif %}
