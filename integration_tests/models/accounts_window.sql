-- incremental_predicates scope the whole MERGE, BY SOURCE included: only target rows in 'eu'
-- can match or be deleted, so 'us' rows missing from the source survive.
{{ config(
    unique_key='id',
    incremental_predicates=["t.region = 'eu'"],
    when_matched=[{'action': 'update'}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'action': 'delete'}],
) }}
select id, region, balance, owner, opened from {{ ref('accounts') }} where phase = {{ var('phase') }}
