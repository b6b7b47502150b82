-- An enforced dbt contract (contracts.yml): id is the table's key (primary_key) and NOT NULL,
-- name NOT NULL, price > 0 (a check constraint): the table's own constraints, held on every
-- write. scripts/main.py's step "run (a contract broken)" runs it again with break_contract:
-- its MERGE brings a row with price 0, so the run fails and the table stays as phase 2 left
-- it (tests/contracted_prices_unchanged.sql).
{{ config(unique_key='id') }}
select id, name, price from values
  (1, 'apple', cast(1.50 as decimal(6, 2))),
  (2, 'pear', cast(2.00 as decimal(6, 2)))
  {%- if var('phase') | int >= 2 %}, (3, 'plum', cast(0.50 as decimal(6, 2))){% endif %}
  {%- if var('break_contract', false) %}, (4, 'free lunch', cast(0.00 as decimal(6, 2))){% endif %}
  as t(id, name, price)
