-- Soft delete: customers missing from the source are flagged, not removed.
{{ config(
    unique_key='id',
    when_matched=[{'action': 'update', 'set': {'name': 's.name'}}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'condition': 'not t.is_deleted', 'action': 'update', 'set': {'is_deleted': 'true'}}],
) }}
select id, name, false as is_deleted from {{ ref('customers') }} where phase = {{ var('phase') }}
