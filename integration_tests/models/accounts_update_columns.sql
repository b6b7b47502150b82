-- Only `balance` is updated (merge_update_columns); unchanged rows are rewritten anyway
-- (skip_unchanged=false); a NULL key matches nothing under SQL equality, so it is inserted again.
{{ config(
    unique_key='id',
    merge_update_columns=['balance'],
    skip_unchanged=false,
    prune_tablets=false,
) }}
select id, region, balance, owner, opened from {{ ref('accounts') }} where phase = {{ var('phase') }}
