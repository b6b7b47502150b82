-- contracted_prices holds the rows of the phase that last ran it, and none that breaks its
-- contract: the run with break_contract (scripts/main.py) failed and wrote nothing.
select 'row count' as problem, n as value
from (select count(*) as n from {{ ref('contracted_prices') }})
where n != {{ 3 if var('phase') | int >= 2 else 2 }}
union all
select 'breaks the contract', id
from {{ ref('contracted_prices') }}
where price <= 0 or name is null or id is null
