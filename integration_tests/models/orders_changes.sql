-- tablets_changes: orders_incremental's changes since this model last read them, appended (each
-- change once: the version read is recorded in this model's own commit).
{{ config(materialized='incremental', incremental_strategy='append', file_format='tablets') }}
select id, status, amount, _change_type, _commit_version
from {{ tablets_changes(ref('orders_incremental')) }}
