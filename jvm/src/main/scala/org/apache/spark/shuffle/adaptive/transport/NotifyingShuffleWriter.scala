package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.{IndexShuffleBlockResolver, ShuffleWriter}

/**
 * Spark's writer, plus: once the map output is committed and before its MapStatus leaves the
 * task, each serving side (the transport's, the shuffle stores') learns of it, in order.
 */
private[spark] final class NotifyingShuffleWriter[K, V](
    writer: ShuffleWriter[K, V],
    shuffleId: Int,
    mapId: Long,
    resolver: IndexShuffleBlockResolver,
    servings: Seq[MapOutputListener])
    extends ShuffleWriter[K, V] {

  override def write(records: Iterator[Product2[K, V]]): Unit = writer.write(records)

  override def stop(success: Boolean): Option[MapStatus] = {
    val status = writer.stop(success)
    if (success && status.isDefined) {
      val offsets = writer.getPartitionLengths().scanLeft(0L)(_ + _)
      val dataFile = resolver.getDataFile(shuffleId, mapId)
      servings.foreach(_.committed(shuffleId, mapId, dataFile, offsets))
    }
    status
  }

  override def getPartitionLengths(): Array[Long] = writer.getPartitionLengths()
}
