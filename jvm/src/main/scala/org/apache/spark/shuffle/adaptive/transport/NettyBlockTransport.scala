package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.shuffle.{BlockFetchingListener, BlockStoreClient, DownloadFileManager}
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}

/**
 * TCP transport through Spark's own [[BlockStoreClient]], so retries, `spark.authenticate`,
 * the external shuffle service and Netty's memory management behave exactly as in Spark.
 */
private[spark] final class NettyBlockTransport(client: BlockStoreClient) extends BlockTransport {

  override def name: String = "netty"

  override def fetch(
      address: BlockManagerId,
      blockIds: Array[String],
      listener: BlockFetchingListener,
      downloads: Option[DownloadFileManager]): Unit =
    client.fetchBlocks(address.host, address.port, address.executorId, blockIds, listener,
      downloads.orNull)

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause =
    client.diagnoseCorruption(address.host, address.port, address.executorId,
      block.shuffleId, block.mapId, block.reduceId, checksum, algorithm)
}
