package org.apache.spark.shuffle.adaptive

import org.apache.spark.ShuffleDependency
import org.apache.spark.shuffle.{BaseShuffleHandle, ShuffleHandle}
import org.apache.spark.shuffle.adaptive.metrics.{FetchMetricsAccumulator, StoreAccumulators}

/**
 * The handle tasks receive: the sort shuffle's own handle (which picks the map-side writer) and
 * the accumulator reduce tasks report their [[metrics.FetchCounters]] through; in mode=store, the
 * accumulators map tasks report where the meta-shuffle put their blocks.
 */
private[spark] final class AdaptiveShuffleHandle[K, V, C](
    shuffleId: Int,
    dependency: ShuffleDependency[K, V, C],
    val writeHandle: ShuffleHandle,
    val fetchMetrics: FetchMetricsAccumulator,
    val storeMetrics: Option[StoreAccumulators])
    extends BaseShuffleHandle(shuffleId, dependency)
