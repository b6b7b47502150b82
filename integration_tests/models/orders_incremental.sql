-- dbt's standard keys on a tablet table: incremental + merge goes through the same engine.
{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    file_format='tablets',
    unique_key='id',
) }}
select id, status, amount from {{ ref('orders') }} where phase = {{ var('phase') }}
