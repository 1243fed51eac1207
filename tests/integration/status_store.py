"""Spark's own numbers, read from the driver's status store (the data of the REST API's
/stages), through py4j: the reference the plugin's counters are checked against."""


def stage_totals(spark, field):
    """Sum of ``field`` (a StageData getter, e.g. "shuffleReadBytes") over every stage Spark's
    status store knows (all statuses, no details)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    stages = store.stageList(
        None,
        getattr(store, "stageList$default$2")(),
        getattr(store, "stageList$default$3")(),
        getattr(store, "stageList$default$4")(),
        getattr(store, "stageList$default$5")(),
    )
    return sum(int(getattr(stages.apply(i), field)()) for i in range(stages.size()))
