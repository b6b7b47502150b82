-- customers_check holds exactly these versions (rows returned are failures): after phase 1 one
-- current version per customer; after phase 2 customer 2's is closed and followed by a deletion
-- record, customer 3's by the renamed one. Each closed version ends where the next one begins.
{% set expected %}
  {% if var('phase') == 1 %}
    (1, 'ann', 'False', true), (2, 'bob', 'False', true), (3, 'cy', 'False', true)
  {% else %}
    (1, 'ann', 'False', true),
    (2, 'bob', 'False', false), (2, 'bob', 'True', true),
    (3, 'cy', 'False', false), (3, 'cyrus', 'False', true)
  {% endif %}
{% endset %}
with actual as (
    select id, name, dbt_is_deleted, dbt_valid_to is null as is_current
    from {{ ref('customers_check') }}
),
expected as (
    select * from values {{ expected }} as v(id, name, dbt_is_deleted, is_current)
),
versions as (
    select id, dbt_scd_id, dbt_valid_to,
           lead(dbt_valid_from) over (partition by id order by dbt_valid_from) as next_valid_from,
           count(*) over (partition by dbt_scd_id) as scd_id_rows
    from {{ ref('customers_check') }}
)
select 'unexpected' as problem, * from (select * from actual except all select * from expected)
union all
select 'missing', * from (select * from expected except all select * from actual)
union all
select 'not contiguous', id, dbt_scd_id, null, null from versions
where not (dbt_valid_to <=> next_valid_from) or scd_id_rows > 1
