-- An ordinary (non-tablet) table reading tablet tables through ref(): file_format parquet is
-- dbt-spark's table (tablets is the adapter's default).
{{ config(materialized='table', file_format='parquet') }}
select status, count(*) as orders, sum(amount) as amount
from {{ ref('orders_incremental') }}
group by status
