-- The classic upsert with the remaining knobs: NULL keys match NULL keys (null_safe_keys), the
-- opening date is never overwritten (merge_exclude_columns), the condition uses custom aliases,
-- and new tablets are small and sorted by id so later merges can prune them.
{{ config(
    unique_key='id',
    null_safe_keys=true,
    merge_exclude_columns=['opened'],
    source_alias='src',
    target_alias='tgt',
    when_matched=[{'condition': 'src.balance <> tgt.balance or src.owner <> tgt.owner', 'action': 'update'}],
    when_not_matched=[{'action': 'insert'}],
    cluster_by=['id'],
    target_tablet_rows=2,
    tblproperties={'owner': 'integration-tests'},
) }}
select id, region, balance, owner, opened from {{ ref('accounts') }} where phase = {{ var('phase') }}
