package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.{BlockFetchingListener, BlockStoreClient, DownloadFileManager}
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

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
    client.fetchBlocks(
      address.host,
      address.port,
      address.executorId,
      blockIds.map(_.toString).toArray,
      forward,
      downloads.orNull)
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
}
