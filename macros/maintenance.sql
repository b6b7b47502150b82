{#-- Table maintenance of tablet tables, with Delta's statements (README, "Maintenance"). Each
     macro runs its statement through the adapter (run_query) and renders to nothing, so it works
     as a post-hook and with run-operation alike:

       models:  post_hook: "{{ tablets_optimize(this) }}"
       shell:   dbt run-operation tablets_vacuum --args '{relation: analytics.orders, retain_hours: 200}'
                dbt run-operation tablets_restore --args '{relation: analytics.orders, version: 12}'
--#}

{% macro tablets_vacuum(relation, retain_hours=none, dry_run=false) -%}
  {%- set sql -%}
    VACUUM {{ relation }}{% if retain_hours is not none %} RETAIN {{ retain_hours }} HOURS{% endif %}{% if dry_run %} DRY RUN{% endif %}
  {%- endset -%}
  {{ return(tablets__run_maintenance(sql)) }}
{%- endmacro %}


{% macro tablets_optimize(relation) -%}
  {{ return(tablets__run_maintenance('OPTIMIZE ' ~ relation)) }}
{%- endmacro %}


{% macro tablets_restore(relation, version=none, timestamp=none) -%}
  {%- if (version is none) == (timestamp is none) -%}
    {{ exceptions.raise_compiler_error("tablets_restore(" ~ relation ~ "): give exactly one of version= (a number from DESCRIBE HISTORY) or timestamp= ('2024-05-01 12:00:00')") }}
  {%- endif -%}
  {%- set as_of = 'VERSION AS OF ' ~ version if version is not none else "TIMESTAMP AS OF '" ~ timestamp ~ "'" -%}
  {{ return(tablets__run_maintenance('RESTORE TABLE ' ~ relation ~ ' TO ' ~ as_of)) }}
{%- endmacro %}


{% macro tablets_history(relation, limit=none) -%}
  {{ return(tablets__run_maintenance('DESCRIBE HISTORY ' ~ relation ~ (' LIMIT ' ~ limit if limit is not none else ''))) }}
{%- endmacro %}


{#-- Runs ``sql`` (at execution time only), logs its result rows, renders nothing. --#}
{% macro tablets__run_maintenance(sql) -%}
  {%- if execute -%}
    {%- set result = run_query(sql) -%}
    {%- for row in result.rows -%}
      {%- do log(sql ~ ': ' ~ (zip(result.column_names, row) | map('join', '=') | join(', ')), info=true) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return('') }}
{%- endmacro %}
