-- INSERT ... ON CONFLICT (id) DO NOTHING: keep the first value ever seen for a key.
{{ config(unique_key='id', on_conflict='do_nothing') }}
select id, value from {{ ref('kv') }} where phase = {{ var('phase') }}
