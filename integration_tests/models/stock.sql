-- depends_on: {{ ref('daily_sales') }}
-- Seed 003 (PostgreSQL MERGE notes): Stock / DailySales.
-- First run: the stock on hand. Later runs: merge the day's sales into it.
{{ config(
    unique_key='item',
    when_matched=[
        {'condition': 't.qty_on_hand - s.qty_sold = 0', 'action': 'delete'},
        {'action': 'update', 'set': {'qty_on_hand': 't.qty_on_hand - s.qty_sold'}},
    ],
    when_not_matched=[
        {'action': 'insert', 'values': {'item': 's.item', 'qty_on_hand': 's.qty_sold'}},
    ],
    persist_docs={'relation': true, 'columns': true},
    post_hook="{{ tablets_vacuum(this) }}",
) }}
{% if is_incremental() %}
select item, qty_sold from {{ ref('daily_sales') }} where phase = {{ var('phase') }}
{% else %}
select item, qty_on_hand from {{ ref('stock_initial') }}
{% endif %}
