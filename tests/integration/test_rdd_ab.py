"""RDD shuffles A/B: Spark's sort shuffle vs the plugin on local-cluster[2,1,1024]."""

import hashlib
import random
from operator import add

import pytest
from ab_conf import LOCAL_AB, UCX_AVAILABLE, UCX_PUSH_VARIANTS, read_from_files_but_combined

pytestmark = pytest.mark.integration

ab = LOCAL_AB
RECORD_BYTES = 300 * 1024  # > maxSizeInFlight (1m) / 5, and > the push variant's block limit


@ab.workload(unordered=True)
def reduce_by_key(spark):
    rdd = spark.sparkContext.parallelize(range(20000), 4)
    return rdd.map(lambda x: (x % 97, x)).reduceByKey(add, 5).collect()


@ab.workload
def jvm_reduce_by_key(spark):
    # A JVM RDD's reduceByKey (map-side combine in the JVM, which local reduction combines per
    # executor); PySpark's reduceByKey combines in Python and is a plain shuffle of bytes.
    from pyspark_shuffle.dummy import keyed_sums

    return keyed_sums(spark, rows=40000, keys=300, partitions=8, reducers=5)


@ab.workload(unordered=True)
def group_by_key(spark):
    rdd = spark.sparkContext.parallelize(range(6000), 4)
    return rdd.map(lambda x: (x % 31, x)).groupByKey(3).mapValues(sorted).collect()


@ab.workload(unordered=True)
def rdd_join(spark):
    sc = spark.sparkContext
    left = sc.parallelize([(i % 50, i) for i in range(3000)], 4)
    right = sc.parallelize([(i % 70, -i) for i in range(700)], 3)
    return left.join(right, 6).collect()


@ab.workload(unordered=True)
def cogroup(spark):
    sc = spark.sparkContext
    left = sc.parallelize([(i % 40, i) for i in range(2000)], 3)
    right = sc.parallelize([(i % 60, str(i)) for i in range(600)], 2)
    return left.cogroup(right, 5).mapValues(lambda vs: (sorted(vs[0]), sorted(vs[1]))).collect()


@ab.workload
def sort_by_key(spark):
    keys = [(i * 7919) % 10007 for i in range(10007)]  # a permutation of 0..10006
    rdd = spark.sparkContext.parallelize([(k, k * 2) for k in keys], 4).sortByKey(numPartitions=16)
    bounds = rdd.glom().map(lambda part: (part[0][0], part[-1][0], len(part)) if part else None).collect()
    return rdd.getNumPartitions(), rdd.collect(), bounds


@ab.workload
def repartition(spark):
    rdd = spark.sparkContext.parallelize(range(5000), 3).repartition(7)
    return rdd.getNumPartitions(), rdd.glom().map(sorted).collect()


@ab.workload(unordered=True)
def distinct(spark):
    return spark.sparkContext.parallelize([i % 1000 for i in range(12000)], 4).distinct(5).collect()


@ab.workload
def empty(spark):
    sc = spark.sparkContext
    nothing = sc.emptyRDD().map(lambda x: (x, 1)).reduceByKey(add, 4).collect()
    mostly_empty = sc.parallelize([(1, "a")], 3).partitionBy(6).glom().map(len).collect()
    return nothing, mostly_empty


@ab.workload(unordered=True)
def large_records(spark):
    def record(i):
        # Incompressible, so that a block holding one is as large on disk as in memory.
        return i % 5, random.Random(i).randbytes(RECORD_BYTES)

    rdd = spark.sparkContext.parallelize(range(24), 4).map(record)
    digests = rdd.groupByKey(3).mapValues(
        lambda values: sorted((len(v), hashlib.sha256(v).hexdigest()) for v in values)
    )
    return digests.collect()


@ab.workload(unordered=True)
def hot_key(spark):
    def key(i):
        return 0 if i % 5 != 0 else i + 1  # 80% of the records share key 0

    rdd = spark.sparkContext.parallelize(range(20000), 4).map(lambda i: (key(i), i))
    return rdd.groupByKey(4).mapValues(lambda vs: (len(vs), sum(vs))).collect()


@pytest.mark.parametrize(
    "name",
    ["reduce_by_key", "jvm_reduce_by_key", "group_by_key", "rdd_join", "cogroup", "repartition", "distinct"],
)
def test_same_result(name):
    assert ab.assert_same(name)


def test_both_sides_ran_their_manager():
    result = ab.run()
    assert result.sort.manager_class.endswith("SortShuffleManager")
    assert set(result.plugins) == {"adaptive", "push", "push-replicated", *UCX_PUSH_VARIANTS}
    for side in result.plugins.values():
        assert side.manager_class.endswith("AdaptiveShuffleManager")


def test_same_host_blocks_are_read_from_files_unless_turned_off():
    result = ab.run()
    counters = result.plugins["adaptive"].metrics["application"]
    # Both executors of local-cluster share the host: no block of a file crosses the network.
    assert set(read_from_files_but_combined(counters)) == {"local", "host-local"}, counters
    assert set(counters["requests_by_transport"]) <= {"host-local", "netty"}, counters
    assert counters["transport_fallbacks"] == 0
    # The push variant turns them off: the other executor's files and stores cross Netty.
    network = result.plugins["push"].metrics["application"]
    assert set(network["bytes_by_transport"]) == {"local", "netty"}, network
    assert set(network["requests_by_transport"]) == {"netty"}, network
    assert result.sort.metrics == {
        "manager": result.sort.manager_class,
        "application": {},
        "since_mark": {},
        "executors": {},
        "combine": {},
        "push": {},
        "losses": {},
        "cpu": {},
    }


def test_aggregations_are_combined_per_executor_unless_every_shuffle_is_pushed():
    result = ab.run()
    for variant in ("adaptive", "push", *UCX_PUSH_VARIANTS):
        metrics = result.plugins[variant].metrics
        combine = metrics["application"]["combine"]
        assert combine["segments_read"] > 0 and combine["rows_merged"] > 0, (variant, combine)
        assert combine["rows_out"] < combine["rows_in"], (variant, combine)
        assert combine["failed_reads"] == 0, (variant, combine)
        # Each combining shuffle's map tasks folded, or judged whether folding pays and wrote
        # their files (the first on each executor always does; these shuffles are small).
        by_shuffle = metrics["combine"]
        assert by_shuffle and all(c["maps_folded"] + c["maps_not_folded"] > 0 for c in by_shuffle.values())
        assert any(c["maps_folded"] > 0 for c in by_shuffle.values()), by_shuffle
    # Under replicated push every shuffle is pushed, so that its map outputs are held elsewhere.
    replicated = result.plugins["push-replicated"].metrics
    assert replicated["combine"] == {} and replicated["application"]["combine"]["maps_folded"] == 0


def test_push_variant_reads_merged_chunks_and_files():
    metrics = ab.run().plugins["push"].metrics
    counters = metrics["application"]
    assert counters["chunks_read"] > 0 and counters["chunk_fallbacks"] == 0, counters
    assert counters["blocks_from_stores"] > counters["chunks_read"], counters
    assert 0 < counters["bytes_from_stores"] < sum(counters["bytes_by_transport"].values()), counters
    # The driver's summaries of what both owners had merged as each map stage ended.
    summaries = [s for s in metrics["push"].values() if "owners_asked" in s]
    assert summaries and all(s["owners_answered"] == s["owners_asked"] == 2 for s in summaries)
    assert all(s["merged_bytes"] <= s["shuffle_bytes"] for s in summaries), metrics["push"]
    assert any(s["merged_bytes"] > 0 and s["driver_state_bytes"] > 0 for s in summaries), metrics["push"]
    # Per shuffle, where its reduce tasks ran against its owners; together, every chunk read.
    reads = [s for s in metrics["push"].values() if "reduce_tasks_reading_chunks" in s]
    assert sum(s["bytes_from_chunks"] for s in reads) == counters["bytes_from_stores"], metrics["push"]
    assert sum(s["bytes_at_owner"] for s in reads) == counters["bytes_at_owner"] > 0, metrics["push"]
    for s in reads:
        assert s["reduce_tasks_at_owner"] <= s["reduce_tasks_reading_chunks"] <= s["reduce_tasks"], s
        assert s["bytes_at_owner"] <= s["bytes_from_chunks"] <= s["bytes_read"], s


def test_replicated_push_merges_every_map_output_before_its_stage_ends():
    metrics = ab.run().plugins["push-replicated"].metrics
    counters = metrics["application"]
    assert counters["chunks_read"] > 0 and counters["chunk_fallbacks"] == 0, counters
    assert metrics["losses"] == {"executors_lost": 0, "map_outputs_kept": 0, "map_outputs_rerun": 0}
    # Of the bytes the MapStatuses report, which round each block's size up (by up to a tenth):
    # a map output pushed in part would bring a summary well below that.
    ratios = [s["merged_ratio"] for s in metrics["push"].values()]
    assert ratios and min(ratios) > 0.9, metrics["push"]


@pytest.mark.skipif(not UCX_AVAILABLE, reason="no UCX libraries: pip install 'pyspark-shuffle[ucx]'")
def test_push_over_ucx_reads_merged_chunks_one_sided():
    counters = ab.run().plugins["push-ucx"].metrics["application"]
    assert counters["chunks_one_sided"] > 0 and counters["chunk_fallbacks"] == 0, counters
    # Chunks and files of the other executor alike: one-sided reads only.
    assert set(read_from_files_but_combined(counters)) == {"local", "ucx"}, counters
    assert counters["transport_fallbacks"] == 0, counters


def test_reduce_by_key_values():
    expected = {k: sum(x for x in range(20000) if x % 97 == k) for k in range(97)}
    assert dict(ab.assert_same("reduce_by_key")) == expected


def test_sort_by_key_global_order():
    partitions, rows, bounds = ab.assert_same("sort_by_key")
    assert partitions == 16
    assert [k for k, _ in rows] == list(range(10007))
    filled = [b for b in bounds if b is not None]
    assert len(filled) > 8 and sum(n for _, _, n in filled) == 10007
    assert all(prev[1] < nxt[0] for prev, nxt in zip(filled, filled[1:]))


def test_distinct_count():
    assert sorted(ab.assert_same("distinct")) == list(range(1000))


def test_empty():
    nothing, mostly_empty = ab.assert_same("empty")
    assert nothing == [] and sorted(mostly_empty) == [0, 0, 0, 0, 0, 1]


def test_large_records():
    groups = dict(ab.assert_same("large_records"))
    assert sorted(groups) == [0, 1, 2, 3, 4]
    assert sum(len(v) for v in groups.values()) == 24
    assert all(size == RECORD_BYTES for v in groups.values() for size, _ in v)


def test_hot_key():
    groups = dict(ab.assert_same("hot_key"))
    assert groups[0][0] == 16000
    assert sum(n for n, _ in groups.values()) == 20000
