-- INSERT ... ON CONFLICT (id) DO UPDATE: the classic upsert, written the PostgreSQL way.
{{ config(unique_key='id', on_conflict='do_update') }}
select id, value from {{ ref('kv') }} where phase = {{ var('phase') }}
