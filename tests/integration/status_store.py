"""Spark's own numbers, read from the driver's status store (the data of the REST API's
/stages), through py4j: the reference the plugin's counters are checked against."""


def _stages(spark):
    """Every stage attempt Spark's status store knows (all statuses, no details)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    stages = store.stageList(
        None,
        getattr(store, "stageList$default$2")(),
        getattr(store, "stageList$default$3")(),
        getattr(store, "stageList$default$4")(),
        getattr(store, "stageList$default$5")(),
    )
    return [stages.apply(i) for i in range(stages.size())]


def stage_totals(spark, field):
    """Sum of ``field`` (a StageData getter, e.g. "shuffleReadBytes") over every stage Spark's
    status store knows."""
    return sum(int(getattr(stage, field)()) for stage in _stages(spark))


def map_tasks_completed(spark):
    """Map tasks that completed so far, in every attempt of every stage that wrote shuffle
    output: a map stage run again after a loss counts its tasks again."""
    return sum(int(s.numCompleteTasks()) for s in _stages(spark) if int(s.shuffleWriteBytes()) > 0)
