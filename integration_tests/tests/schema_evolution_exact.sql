-- schema_evolution_merge holds exactly these rows and columns (rows returned are failures): after
-- phase 1 the created table; after phase 2 its MERGE WITH SCHEMA EVOLUTION (loud added, n widened).
{% if var('phase') == 1 %}
  {% set columns, expected = 'id, value, n', "(1, 'one', 1), (2, 'two', 2)" %}
{% else %}
  {% set columns = 'id, value, n, loud' %}
  {% set expected = "(1, 'one', 1, null), (2, 'TWO', 20000000000, 'TWO'), (3, 'three', 30000000000, 'THREE')" %}
{% endif %}
with actual as (select {{ columns }} from {{ ref('schema_evolution_merge') }}),
expected as (select * from values {{ expected }} as v({{ columns }}))
select 'unexpected' as problem, * from (select * from actual except all select * from expected)
union all
select 'missing', * from (select * from expected except all select * from actual)
union all
-- the column's type widened with the rows (a view over the wrong type would still compare equal)
select 'n is not bigint', * from actual where typeof(n) != '{{ "int" if var("phase") == 1 else "bigint" }}'
