package org.apache.spark.shuffle.adaptive.push

/**
 * Predicts the final size of each reduce partition of a shuffle from the map outputs seen so
 * far (iShuffle, section 3.3.1). The paper fits, per partition, a line in the map task's input
 * size (map selectivity) and evaluates it at the input sizes of the maps still to run. A shuffle
 * manager does not learn the input sizes of map tasks that have not run; at their best estimate,
 * the mean input of those observed, the least-squares line gives the mean observed block, so a
 * partition's prediction is its observed bytes plus, for each map not yet seen, its mean bytes
 * per map seen. Not thread-safe.
 */
private[spark] final class PartitionSizePredictor(numPartitions: Int) {

  private[this] val observed = new Array[Long](numPartitions)
  private[this] var maps = 0

  /** One map output's non-empty blocks: their reduce ids and sizes. */
  def observe(reduceIds: Array[Int], sizes: Array[Long]): Unit = {
    reduceIds.indices.foreach(i => observed(reduceIds(i)) += sizes(i))
    maps += 1
  }

  def mapsObserved: Int = maps

  /** Predicted bytes per reduce partition once all `numMaps` map outputs exist. */
  def predicted(numMaps: Int): Array[Double] = {
    // Retried map tasks are seen again: never predict less than what was seen.
    val scale = if (maps == 0) 0.0 else math.max(numMaps, maps).toDouble / maps
    observed.map(_ * scale)
  }
}
