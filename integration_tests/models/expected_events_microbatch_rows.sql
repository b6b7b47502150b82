-- expected_events_microbatch (days ago) as the microbatch model's rows (event_time today - n, noon)
{{ config(materialized='view') }}
select id, timestamp(date_sub(current_date(), cast(days_ago as int))) + interval 12 hours as event_time, value
from {{ ref('expected_events_microbatch') }}
