"""Batch fetch of AQE's coalesced partitions on the plugin's local-cluster session: one block per
map output instead of one per partition, with the same rows (``spark.sql.adaptive.
fetchShuffleBlocksInBatch``, a runtime SQL setting, on and off in the one shared session)."""

import pytest

import pyspark_shuffle

pytestmark = pytest.mark.integration

PARTITIONS = 2100
AQE_COALESCED = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.shuffle.partitions": str(PARTITIONS),
}


@pytest.fixture(scope="module")
def spark(pyspark_shuffle_spark):
    return pyspark_shuffle_spark


def coalesced_group_by(spark, batch):
    """Rows of a 2100-partition groupBy that AQE coalesces into few reduce tasks, and the
    plugin's request and block counts for it."""
    from pyspark.sql import functions as F

    settings = dict(AQE_COALESCED, **{"spark.sql.adaptive.fetchShuffleBlocksInBatch": str(batch).lower()})
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        before = pyspark_shuffle.metrics(spark)["application"]
        df = (
            spark.range(0, 40000, 1, 2)
            .groupBy((F.col("id") % 3000).alias("k"))
            .agg(F.count("*"), F.sum("id"))
        )
        rows = sorted(tuple(r) for r in df.collect())
        plan = df._jdf.queryExecution().executedPlan().toString()
        after = pyspark_shuffle.metrics(spark)["application"]
    finally:
        for key, value in previous.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)
    assert "coalesced" in plan, plan

    def grew(name):
        return sum(after[name].values()) - sum((before.get(name) or {}).values())

    return rows, {
        "requests": after["requests"] - before.get("requests", 0),
        "blocks": grew("blocks_by_transport"),
    }


@pytest.fixture(scope="module")
def both(spark):
    return coalesced_group_by(spark, batch=True), coalesced_group_by(spark, batch=False)


def test_batches_return_the_same_rows(both):
    (batched, _), (single, _) = both
    assert batched == single
    assert len(batched) == 3000 and sum(n for _, n, _ in batched) == 40000


def test_batches_fetch_one_block_per_map_output(both):
    (_, batched), (_, single) = both
    # 2 map tasks x most of 2100 partitions, read by few coalesced tasks.
    assert single["blocks"] >= PARTITIONS, single
    assert batched["blocks"] * 10 <= single["blocks"], (batched, single)
    assert batched["requests"] * 10 <= PARTITIONS, batched
