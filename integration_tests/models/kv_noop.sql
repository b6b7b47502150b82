-- A degenerate MERGE: every clause is DO NOTHING. Later runs change nothing and run no Spark job.
{{ config(
    unique_key='id',
    when_matched=[{'action': 'do_nothing'}],
    when_not_matched=[{'action': 'do_nothing'}],
) }}
select id, value from {{ ref('kv') }} where phase = {{ var('phase') }}
