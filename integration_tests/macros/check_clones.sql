{#-- After `dbt clone --state target --target clones`: every model, seed and snapshot of the project
     exists in the clones' schemas with the same rows; the tablet tables among them are shallow
     clones (their first version a CLONE, no file copied), the rest views of the originals.
     `dbt run-operation check_clones --target clones --args '{source_schema: integration}'`. --#}
{% macro check_clones(source_schema) %}
  {%- set problems = [] -%}
  {%- set checked = {'clones': 0, 'views': 0} -%}
  {%- for node in graph.nodes.values() if node.resource_type in ('model', 'seed', 'snapshot')
        and node.config.materialized not in ('ephemeral', 'test') -%}
    {%- set clone = adapter.get_relation(node.database, node.schema, node.alias) -%}
    {%- set original_schema = node.schema | replace(target.schema, source_schema) -%}
    {%- set original = adapter.get_relation(node.database, original_schema, node.alias) -%}
    {%- if original is none -%}
      {#-- not built in the source schemas (disabled): nothing to compare --#}
    {%- elif clone is none -%}
      {%- do problems.append(node.name ~ ": no clone in " ~ node.schema) -%}
    {%- else -%}
      {%- set n_clone = run_query("select count(*) from " ~ clone).columns[0].values()[0] -%}
      {%- set n_orig = run_query("select count(*) from " ~ original).columns[0].values()[0] -%}
      {%- if n_clone != n_orig -%}
        {%- do problems.append(node.name ~ ": " ~ n_clone ~ " rows in the clone, " ~ n_orig ~ " in " ~ original) -%}
      {%- endif -%}
      {%- if adapter.is_tablet_table(original) -%}
        {%- set ops = run_query("describe history " ~ clone).columns[2].values() -%}
        {%- if ops[-1] != 'CLONE' -%}
          {%- do problems.append(node.name ~ ": its first version is " ~ ops[-1] ~ ", not a CLONE") -%}
        {%- endif -%}
        {%- do checked.update({'clones': checked['clones'] + 1}) -%}
      {%- elif clone.type != 'view' -%}
        {%- do problems.append(node.name ~ ": a " ~ clone.type ~ ", not a view of " ~ original) -%}
      {%- else -%}
        {%- do checked.update({'views': checked['views'] + 1}) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if problems -%}
    {{ exceptions.raise_compiler_error("dbt clone: " ~ problems | join("; ")) }}
  {%- endif -%}
  {{ log("dbt clone: " ~ checked['clones'] ~ " shallow clones and " ~ checked['views'] ~ " views match their originals", info=true) }}
{% endmacro %}
