-- accounts_timestamp holds exactly these versions (rows returned are failures). Versions are
-- valid from the source's updated_at; current ones end in 9999-12-31 (dbt_valid_to_current);
-- account 2, gone from the source in phase 2, ends at the time of that snapshot.
{% set expected %}
  {% if var('phase') == 1 %}
    (1, 'eu', 100, 'ann', '2024-01-01', 'current'),
    (2, 'us', 200, 'bob', '2024-01-02', 'current'),
    (3, 'eu', 300, 'cy', '2024-01-03', 'current')
  {% else %}
    (1, 'eu', 100, 'ann', '2024-01-01', '2024-02-01'),
    (1, 'eu', 150, 'ANN', '2024-02-01', 'current'),
    (2, 'us', 200, 'bob', '2024-01-02', 'deleted'),
    (3, 'eu', 300, 'cy', '2024-01-03', 'current'),
    (4, 'us', 400, 'dee', '2024-02-04', 'current')
  {% endif %}
{% endset %}
with actual as (
    select id, region, balance, owner, date_format(valid_from, 'yyyy-MM-dd') as valid_from,
           case when valid_to = to_timestamp('9999-12-31') then 'current'
                when valid_to > dbt_updated_at and valid_to > to_timestamp('2025-01-01')
                     and valid_to <= current_timestamp() then 'deleted'
                else date_format(valid_to, 'yyyy-MM-dd') end as valid_to
    from {{ ref('accounts_timestamp') }}
),
expected as (
    select * from values {{ expected }} as v(id, region, balance, owner, valid_from, valid_to)
)
select 'unexpected' as problem, * from (select * from actual except all select * from expected)
union all
select 'missing', * from (select * from expected except all select * from actual)
