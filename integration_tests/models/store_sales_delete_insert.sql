-- delete+insert on a tablet table, keyed by day: a run deletes every row of each day it brings
-- and inserts its rows (several per day), in one commit. Phase 2 reloads 2024-03-02 (store B
-- gone, C new, A changed) and adds 2024-03-03; 2024-03-01 is left alone.
{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    file_format='tablets',
    unique_key='day',
) }}
select day, store, amount from {{ ref('store_sales') }} where phase = {{ var('phase') }}
