-- Seed 004 (Firebolt): sync the public table from the staged students (insert, update,
-- delete by source). The source has more columns than the public table.
{{ config(
    unique_key='id',
    when_not_matched=[{'action': 'insert', 'values': {
        'id': 's.id', 'full_name': 's.full_name', 'graduation_date': 's.graduation_date'}}],
    when_matched=[{'action': 'update', 'set': {
        'full_name': 's.full_name', 'graduation_date': 's.graduation_date'}}],
    when_not_matched_by_source=[{'action': 'delete'}],
) }}
{% if is_incremental() %}
select id, full_name, dob, graduation_date from {{ ref('hogwarts_students') }} where phase = {{ var('phase') }}
{% else %}
select id, full_name, graduation_date from {{ ref('hogwarts_students') }} where phase = {{ var('phase') }}
{% endif %}
