{#-- dbt's is_incremental(), also true for a merge_tablets model whose tablet table exists (its
     later runs merge). dbt-core's macro is not dispatched; an adapter's include project comes
     before dbt's own in the macro search order, so this one is used under type: tablets. --#}
{% macro is_incremental() %}
    {#-- do not run introspective queries in parsing #}
    {% if not execute %}
        {{ return(False) }}
    {% else %}
        {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
        {% set materialized = model.config.materialized %}
        {{ return(relation is not none
                  and relation.type == 'table'
                  and (materialized == 'incremental'
                       or (materialized == 'merge_tablets' and adapter.is_tablet_table(relation)))
                  and not should_full_refresh()) }}
    {% endif %}
{% endmacro %}
