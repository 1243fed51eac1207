"""The Spark configuration every A/B integration module shares (both managers get it)."""

#: Common to all modules: small blocks travel in several requests, few SQL partitions. Spark
#: turns host-local reads off on local-cluster unless they are set; they are set here, as on a
#: real host with several executors (the "network" variant below turns them off).
COMMON_CONF = {
    "spark.shuffle.readHostLocalDisk": "true",
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

#: Spark's reader features the plugin mirrors, turned off: blocks of the other executor (on the
#: same host under local-cluster) then travel through Netty, and AQE's coalesced reads fetch
#: partition by partition.
READER_PARITY_OFF_CONF = {
    "spark.shuffle.readHostLocalDisk": "false",
    "spark.sql.adaptive.fetchShuffleBlocksInBatch": "false",
}

#: On local-cluster every order runs with those features on (Spark's defaults), and the adaptive
#: order once more with them off, so the network path is checked A/B there too.
LOCAL_VARIANTS = dict(FETCH_ORDER_VARIANTS, network={"order": "adaptive"})
LOCAL_VARIANT_CONF = {"network": READER_PARITY_OFF_CONF}
