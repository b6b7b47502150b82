"""The Spark jobs a piece of test code runs."""

import uuid


def spark_jobs(spark, fn) -> list[int]:
    """The ids of the Spark jobs ``fn`` ran: a job group of its own (Spark remembers a group's
    finished jobs, so a reused name would count earlier calls' jobs too)."""
    sc = spark.sparkContext
    group = f"tablets-test-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "probe")
    try:
        fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return list(sc.statusTracker().getJobIdsForGroup(group))
