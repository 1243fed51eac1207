package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.SparkContext
import org.apache.spark.util.LongAccumulator

/**
 * Where the meta-shuffle put one shuffle's map outputs (mode=store), added up by the map tasks:
 * named accumulators, so the Spark UI shows them on the map stage's page.
 */
private[spark] final class StoreAccumulators(
    val acceptedLocally: LongAccumulator,
    val spilledToPeers: LongAccumulator,
    val leftOnDisk: LongAccumulator)
    extends Serializable {

  def add(local: Long, spilled: Long, disk: Long): Unit = {
    acceptedLocally.add(local)
    spilledToPeers.add(spilled)
    leftOnDisk.add(disk)
  }
}

private[spark] object StoreAccumulators {

  def register(sc: SparkContext, shuffleId: Int): StoreAccumulators = {
    def named(what: String) =
      sc.longAccumulator(s"pyspark-shuffle store, shuffle $shuffleId: $what")
    new StoreAccumulators(
      named("bytes in the map task's own store"),
      named("bytes spilled to other executors' memory"),
      named("bytes left on disk"))
  }
}
