package org.apache.spark.shuffle.adaptive.transport

import scala.collection.mutable

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.{BlockFetchingListener, BlockStoreClient, DownloadFileManager}
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}

/**
 * TCP transport through Spark's own [[BlockStoreClient]], so retries, `spark.authenticate`,
 * the external shuffle service and Netty's memory management behave exactly as in Spark.
 */
private[spark] final class NettyBlockTransport(client: BlockStoreClient) extends BlockTransport {

  override def name: String = NettyBlockTransport.Name

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    val byName = blockIds.iterator.map(id => id.toString -> id).toMap
    val forward = new BlockFetchingListener {
      override def onBlockFetchSuccess(blockId: String, buf: ManagedBuffer): Unit =
        listener.onFetched(byName(blockId), buf, name)
      override def onBlockFetchFailure(blockId: String, e: Throwable): Unit =
        listener.onFailed(byName(blockId), e)
    }
    NettyBlockTransport.requests(blockIds).foreach { ids =>
      client.fetchBlocks(
        address.host,
        address.port,
        address.executorId,
        ids.map(_.toString).toArray,
        forward,
        downloads.orNull)
    }
  }

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause =
    client.diagnoseCorruption(
      address.host,
      address.port,
      address.executorId,
      block.shuffleId,
      block.mapId,
      block.reduceId,
      checksum,
      algorithm)
}

private[spark] object NettyBlockTransport {
  val Name = "netty"

  /**
   * Spark's fetch message holds one range per map output in batch mode (`FetchShuffleBlocks`
   * keeps a start and an end reduce id per map, and servers refuse more), so the k-th range of
   * each map goes in the k-th request. A map has several ranges when the blocks between them are
   * read elsewhere, out of merged chunks.
   */
  def requests(blockIds: Seq[BlockId]): Seq[Seq[BlockId]] = {
    val rounds = mutable.ArrayBuffer.empty[mutable.ArrayBuffer[BlockId]]
    val rangesSoFar = mutable.HashMap.empty[(Int, Long), Int]
    blockIds.foreach { id =>
      val round = id match {
        case b: ShuffleBlockBatchId =>
          val key = (b.shuffleId, b.mapId)
          val earlier = rangesSoFar.getOrElse(key, 0)
          rangesSoFar(key) = earlier + 1
          earlier
        case _ => 0
      }
      if (round == rounds.size) rounds += mutable.ArrayBuffer.empty
      rounds(round) += id
    }
    rounds.iterator.map(_.toSeq).toSeq
  }
}
