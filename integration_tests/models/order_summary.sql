-- An ordinary (non-tablet) table reading tablet tables through ref().
{{ config(materialized='table') }}
select status, count(*) as orders, sum(amount) as amount
from {{ ref('orders_incremental') }}
group by status
