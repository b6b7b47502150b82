-- orders_changes holds exactly these change rows (rows returned are failures): after phase 1
-- orders_incremental's rows as inserts; after phase 2 also its merge: order 2 updated, order 3
-- inserted. Each change once. (An incremental model's unique_key declares no key columns on its
-- table, so the update reads as a delete and an insert; a merge_tablets model's reads as an
-- update_preimage and an update_postimage.)
{% set expected %}
  (1, 'new', 'insert'), (2, 'new', 'insert')
  {% if var('phase') == 2 %}
    , (2, 'new', 'delete'), (2, 'shipped', 'insert'), (3, 'new', 'insert')
  {% endif %}
{% endset %}
with actual as (select id, status, _change_type from {{ ref('orders_changes') }}),
expected as (select * from values {{ expected }} as v(id, status, _change_type))
select 'unexpected' as problem, * from (select * from actual except all select * from expected)
union all
select 'missing', * from (select * from expected except all select * from actual)
