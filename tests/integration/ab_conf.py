"""The Spark configuration every A/B integration module shares (both managers get it)."""

from pyspark_shuffle import _ucx
from pyspark_shuffle.testing import ShuffleComparison

#: Common to all modules: small blocks travel in several requests, few SQL partitions. Spark
#: turns host-local reads off on local-cluster unless they are set; they are set here, as on a
#: real host with several executors (the local push variant below turns them off).
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

#: The default fetch order, with Spark's reader features on (Spark's defaults).
ADAPTIVE_VARIANT = {"order": "adaptive"}

#: Spark's reader features the plugin mirrors, turned off: blocks of the other executor (on the
#: same host under local-cluster) then travel through Netty, and AQE's coalesced reads fetch
#: partition by partition.
READER_PARITY_OFF_CONF = {
    "spark.shuffle.readHostLocalDisk": "false",
    "spark.sql.adaptive.fetchShuffleBlocksInBatch": "false",
}

#: UCX one-sided reads are compared over shared memory here (push-ucx below: its reduce tasks read
#: the other executor's files one-sided too, and every shuffle that combines is read in pull
#: mode) and over TCP across the hosts of the namespace cluster (test_cluster_ab). They need the
#: UCX libraries (the test extra installs libucx-cu11); without them the variant is left out and
#: the UCX tests say so.
UCX_AVAILABLE = _ucx.library_dir() is not None

#: mode="push" over UCX (shared memory), with stores large enough to hold every merged chunk:
#: owners expose the chunks they merged and reduce tasks read them one-sided. Its reads take the
#: critical order.
UCX_PUSH_VARIANTS = (
    {"push-ucx": {"order": "critical", "mode": "push", "transport": "ucx"}} if UCX_AVAILABLE else {}
)

#: mode="push" with small stores (64 KiB; they free up only as Spark unregisters shuffles, so
#: later workloads find them fuller) and small chunks: blocks pushed to their owners in the
#: background and merged (in memory, handed off to the other executor by a full store, or moved
#: to disk when that one is full too), left in their files by a full push queue, or pushed after
#: their partition was read (sealed). The blocks of test_rdd_ab's large records (incompressible,
#: 300 KiB each) are over the block limit, so they are always read from their files; every other
#: block of these small workloads is under it. On local-cluster it also takes what no other
#: variant does (an application less than a variant of its own): Spark's random fetch order with
#: the elastic limit off (Spark's fixed limit), and the reader features above off, so what is
#: not merged crosses Netty.
PUSH_VARIANT = {
    "order": "critical",
    "mode": "push",
    "store_max_size": "64k",
    "push_chunk_size": "16k",
    "push_max_block_size": "256k",
}
NAIVE_PUSH_VARIANT = dict(PUSH_VARIANT, order="naive", elastic=False)

#: mode="push" with push_reliability="replicated": every non-empty block pushed (the block limit
#: does not apply), an executor's own partitions to the other executor, and each map task
#: returning once its pushes arrived, so every map stage ends with its outputs merged. Its reads
#: take the pairwise order, which no other variant takes.
REPLICATED_PUSH_VARIANT = {
    "order": "pairwise",
    "mode": "push",
    "push_chunk_size": "16k",
    "push_reliability": "replicated",
}

#: On local-cluster: the adaptive order with Spark's reader features on, push with them off,
#: replicated push and push over UCX: every fetch order, both reader settings, each once.
LOCAL_VARIANTS = dict(
    adaptive=ADAPTIVE_VARIANT,
    push=NAIVE_PUSH_VARIANT,
    **{"push-replicated": REPLICATED_PUSH_VARIANT},
    **UCX_PUSH_VARIANTS,
)
LOCAL_VARIANT_CONF = dict(
    {"push": READER_PARITY_OFF_CONF},
    **{name: {"spark.executorEnv.UCX_TLS": "posix,cma,self"} for name in UCX_PUSH_VARIANTS},
)

#: The RDD and the SQL/AQE workloads (test_rdd_ab, test_sql_ab) run in this one comparison, so
#: each variant is one application; the AQE settings do not touch RDD jobs.
LOCAL_AB = ShuffleComparison(conf=SQL_AQE_CONF, variants=LOCAL_VARIANTS, variant_conf=LOCAL_VARIANT_CONF)


def read_from_files_but_combined(counters):
    """A plugin side's bytes by the path that read them, without what other executors combined
    (local reduction): their memory is read through their block server (netty), whatever path
    reads their files."""
    by_transport = dict(counters["bytes_by_transport"])
    assert by_transport.get("netty", 0) <= counters["combine"]["bytes_out"], counters
    by_transport.pop("netty", None)
    return by_transport


#: The namespace cluster's A/B (Spark standalone, 3 workers with rate-limited links): every
#: executor registered before the first job, so map tasks spread over all three hosts.
CLUSTER_CONF = dict(
    SQL_AQE_CONF,
    **{
        "spark.executor.memory": "768m",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    },
)

#: UCX between hosts: TCP only, since the namespaces share one kernel and UCX would otherwise
#: reach the other "hosts" through shared memory, bypassing their links.
CLUSTER_UCX_VARIANT = {"ucx-tcp": {"order": "critical", "transport": "ucx"}} if UCX_AVAILABLE else {}

#: On the cluster: the default order, push and UCX over TCP (both reading in the critical
#: order). The naive and pairwise orders are compared on local-cluster, which keeps the cluster's
#: links-bound time down.
CLUSTER_VARIANTS = dict(adaptive=ADAPTIVE_VARIANT, push=PUSH_VARIANT, **CLUSTER_UCX_VARIANT)
CLUSTER_VARIANT_CONF = {name: {"spark.executorEnv.UCX_TLS": "tcp,self"} for name in CLUSTER_UCX_VARIANT}

#: The local A/B's shapes that make test also compares on the cluster, where reads cross the
#: hosts' links (Netty and UCX over TCP instead of local-cluster's host-local files): one of each
#: way a reduce task reads there. A first aggregation (the one whose executors are cold), a
#: combined JVM aggregation (combined records fetched from other hosts), a join (two shuffles),
#: records larger than a fifth of maxSizeInFlight (alone in their requests, over push's block
#: limit), empty blocks, a SQL aggregation with AQE's coalesced reads (batch fetches, merged
#: partitions' ranges), AQE's skew split (part of the map outputs: no chunk is read) and 3000
#: reduce partitions (many small chunks in ranges). Every local shape runs under every mode on
#: local-cluster in make test; the others run on the cluster in make test-all
#: (test_cluster_ab_all).
CLUSTER_SHAPES = (
    "reduce_by_key",
    "jvm_reduce_by_key",
    "rdd_join",
    "large_records",
    "empty",
    "group_by",
    "skew_join",
    "many_reduce_partitions",
)
