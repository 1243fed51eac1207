package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{IndexShuffleBlockResolver, ShuffleWriter}

/**
 * Spark's writer, plus: once the map output is committed and before its MapStatus leaves the
 * task, the transport's serving side learns of it.
 */
private[spark] final class ServingShuffleWriter[K, V](
    writer: ShuffleWriter[K, V],
    shuffleId: Int,
    mapId: Long,
    resolver: IndexShuffleBlockResolver,
    serving: MapOutputServing) extends ShuffleWriter[K, V] {

  override def write(records: Iterator[Product2[K, V]]): Unit = writer.write(records)

  override def stop(success: Boolean): Option[MapStatus] = {
    val status = writer.stop(success)
    if (success && status.isDefined) {
      val offsets = writer.getPartitionLengths().scanLeft(0L)(_ + _)
      serving.committed(shuffleId, mapId, resolver.getDataFile(shuffleId, mapId), offsets)
    }
    status
  }

  override def getPartitionLengths(): Array[Long] = writer.getPartitionLengths()
}
