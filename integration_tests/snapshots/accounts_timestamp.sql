-- dbt's timestamp strategy on a tablet table, with the current versions ending in 9999-12-31
-- (dbt_valid_to_current), own names for the validity columns, and deleted accounts closed
-- (hard_deletes='invalidate'). Phase 2 changes account 1, drops 2 and adds 4.
{% snapshot accounts_timestamp %}
{{ config(
    unique_key='id',
    strategy='timestamp',
    updated_at='updated_at',
    hard_deletes='invalidate',
    dbt_valid_to_current="to_timestamp('9999-12-31')",
    snapshot_meta_column_names={'dbt_valid_from': 'valid_from', 'dbt_valid_to': 'valid_to'},
) }}
select id, region, balance, owner, cast(opened as timestamp) as updated_at
from {{ ref('accounts') }}
where phase = {{ var('phase') }} and id is not null
{% endsnapshot %}
