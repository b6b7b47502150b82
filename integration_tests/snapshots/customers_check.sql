-- dbt's check strategy on a tablet table: a customer whose name changes gets a new version, and
-- one missing from the source a deletion record (hard_deletes='new_record'). Phase 2 renames
-- customer 3 and drops customer 2; the MERGE runs on the engine as one commit.
{% snapshot customers_check %}
{{ config(
    unique_key='id',
    strategy='check',
    check_cols=['name'],
    hard_deletes='new_record',
) }}
select id, name from {{ ref('customers') }} where phase = {{ var('phase') }}
{% endsnapshot %}
