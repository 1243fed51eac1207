package org.apache.spark.shuffle.adaptive.store

import java.io.File

import scala.collection.mutable
import scala.reflect.ClassTag
import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.{FileSegmentManagedBuffer, ManagedBuffer}
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.fetch.FetchSettings
import org.apache.spark.shuffle.adaptive.flow.PeerTraffic
import org.apache.spark.shuffle.adaptive.store.StoreRegistry.{Arrived, Place}
import org.apache.spark.shuffle.adaptive.transport.MapOutputServing
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId, StorageLevel}

/**
 * Places each committed map output in the shuffle stores (mode=store), on the map task's
 * thread before its MapStatus leaves: the driver's meta-shuffle decides which store takes
 * which block ([[StoreRegistry]]), the blocks for this executor's store are copied from the
 * file, those for other executors are uploaded to them ([[SpillSender]]), and the driver learns
 * which arrived. Whatever did not stays readable from the file, which is kept in every case.
 */
private[spark] final class StoreMapOutputServing(
    env: SparkEnv,
    store: ShuffleStore,
    registry: RpcEndpointRef) extends MapOutputServing with Logging {

  private[this] val self = env.executorId
  private[this] lazy val transportConf = SparkTransportConf.fromSparkConf(env.conf, "shuffle")

  override def committed(shuffleId: Int, mapId: Long, dataFile: File, offsets: Array[Long]): Unit = {
    val blocks = offsets.indices.dropRight(1).iterator
      .map(r => (r, offsets(r + 1) - offsets(r)))
      .filter(_._2 > 0).toIndexedSeq
    if (blocks.isEmpty) return
    val holders = registry.askSync[Array[(String, String, Int)]](
      Place(self, shuffleId, mapId, blocks.map(_._1).toArray, blocks.map(_._2).toArray))
    val placed = blocks.zip(holders).filter(_._2._1.nonEmpty)
    val arrived = mutable.ArrayBuffer.empty[Int]
    try {
      val (mine, theirs) = placed.partition(_._2._1 == self)
      mine.foreach { case ((reduceId, size), _) =>
        val id = ShuffleBlockId(shuffleId, mapId, reduceId)
        try {
          if (store.putFromFile(id, dataFile, offsets(reduceId), size)) arrived += reduceId
        } catch {
          case NonFatal(e) => logWarning(s"Could not store $id; it stays in its file", e)
        }
      }
      // Peers in the order the meta-shuffle offered them.
      val byPeer = theirs.groupBy(_._2).toSeq.sortBy { case (_, b) => placed.indexOf(b.head) }
        .map { case ((id, host, port), b) =>
          BlockManagerId(id, host, port) -> b.map { case ((reduceId, size), _) =>
            (ShuffleBlockId(shuffleId, mapId, reduceId), size)
          }
        }
      if (byPeer.nonEmpty) {
        sender().send(byPeer, id => new FileSegmentManagedBuffer(transportConf, dataFile,
          offsets(id.reduceId), offsets(id.reduceId + 1) - offsets(id.reduceId)))
          .foreach(id => arrived += id.reduceId)
      }
    } finally {
      registry.askSync[Boolean](Arrived(shuffleId, mapId, arrived.toArray))
    }
  }

  private def sender(): SpillSender = {
    val settings = FetchSettings(env.conf)
    new SpillSender(upload, settings, settings.requestSize, settings.maxBytesInFlight,
      PeerTraffic.shared(settings.waitWindow))
  }

  private def upload(peer: BlockManagerId, id: ShuffleBlockId, data: ManagedBuffer) =
    env.blockManager.blockTransferService.uploadBlock(peer.host, peer.port, peer.executorId, id,
      data, StorageLevel.OFF_HEAP, ClassTag.Byte)

  // The store outlives this serving side (peers spill to it too): StoreExecutor empties it.
  override def removed(shuffleId: Int): Unit = ()

  override def stop(): Unit = ()
}
