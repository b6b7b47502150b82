{#-- grants: plain Spark has no GRANT statement, so a model's grants are refused before anything
     is written (each materialization of this adapter calls tablets_check_grants first); the
     dispatch of apply_grants refuses them too, for what reaches it another way. --#}
{% macro tablets_check_grants() %}
  {% do adapter.check_grants(config.get('grants'), model.name) %}
{% endmacro %}

{% macro tablets__apply_grants(relation, grant_config, should_revoke=True) %}
  {% do adapter.check_grants(grant_config, model.name) %}
{% endmacro %}
