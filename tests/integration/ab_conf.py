"""The Spark configuration every A/B integration module shares (both managers get it)."""

#: Common to all modules: small blocks travel in several requests, few SQL partitions.
COMMON_CONF = {
    "spark.reducer.maxSizeInFlight": "1m",
    "spark.default.parallelism": "4",
    "spark.sql.shuffle.partitions": "8",
}

#: Spark SQL with AQE and a skew join AQE splits at this small scale.
SQL_AQE_CONF = dict(
    COMMON_CONF,
    **{
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.skewJoin.enabled": "true",
        "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
        "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "64k",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    },
)

#: The plugin runs once per exchange order; each must return the sort shuffle's results. The
#: naive variant also turns the elastic limit off (Spark's fixed limit).
FETCH_ORDER_VARIANTS = {
    "adaptive": {"order": "adaptive"},
    "naive": {"order": "naive", "elastic": False},
    "pairwise": {"order": "pairwise"},
}
