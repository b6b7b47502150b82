-- The microbatch model's input: the phase's events, `days_ago` days before today (UTC), at noon.
-- Its event_time lets dbt filter it to each batch's window.
{{ config(materialized='view', event_time='event_time') }}
select id, timestamp(date_sub(current_date(), cast(days_ago as int))) + interval 12 hours as event_time, value
from {{ ref('events') }}
where phase = {{ var('phase') }}
