-- Seed 004, EXAMPLE 2: a DO NOTHING clause takes rows out of the later INSERT clauses.
{{ config(
    unique_key='a',
    when_not_matched=[
        {'condition': 's.b % 2 = 0', 'action': 'do_nothing'},
        {'condition': 's.b < 11', 'action': 'insert', 'values': ['s.a', '100 * s.b']},
        {'condition': 's.b >= 11', 'action': 'insert', 'values': ['s.a', '1 + s.b']},
    ],
) }}
{% if is_incremental() %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 5)
{% else %}
select cast(id as int) as a, cast(id % 17 as int) as b from range(1, 101, 10)
{% endif %}
