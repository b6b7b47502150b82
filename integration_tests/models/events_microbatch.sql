-- microbatch on a tablet table: one batch per day, each one commit that replaces its day.
-- Phase 1 (--full-refresh) builds the four days from `begin`; phase 2 reruns yesterday and today
-- (lookback 1): their rows are replaced (3 changed, 4 gone, 6 and 7 new), older days keep theirs
-- although the input changed them (1) or dropped them (2). Days are relative to today (UTC):
-- a `make main` that runs across midnight UTC sees other windows.
{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    file_format='tablets',
    event_time='event_time',
    batch_size='day',
    lookback=1,
    begin=modules.datetime.datetime.combine(
        modules.datetime.datetime.utcnow().date() - modules.datetime.timedelta(days=3),
        modules.datetime.time()),
) }}
select id, event_time, value from {{ ref('events_input') }}
