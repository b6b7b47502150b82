"""The engine: plans a statement spec and runs it on Spark, one commit per statement.

Rooms: ``plan`` (spec + schemas -> Plan; with ``scope``, ``images``, ``keys``, ``arrow_eval``),
``route`` (which plan a statement takes: the driver's or Spark's), ``executor`` (the entry of a
MERGE and the plan choice), ``run`` (one statement's state), ``intake`` (the source, read once),
``prune`` (the tablets to touch), ``driver_plan`` (the rows classified in Arrow), ``pairs_sql``
(Spark's pairs), ``streams`` and ``tasks`` (the writes), ``conflicts`` (what the commit must know),
``append``, ``errors``, ``explain``, ``rerun``, ``metrics``, ``names``.

May import: ``tablets.spark``, ``tablets.spec``, ``tablets.storage`` and the leaves
(``exceptions``, ``settings``, ``sqltext``); never ``tablets.sql``, the front door or dbt
(``tests/unit/test_layers.py``).
"""
