package org.apache.spark.shuffle.adaptive.store

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

/**
 * Reads blocks held in other executors' stores through Spark's block server (`network`), whose
 * resolver serves them from the store; a block the store cannot serve (its executor is gone) is
 * read from its map output's executor through the usual `chain` instead. Every other block goes
 * to `chain` unchanged.
 */
private[spark] final class StoreTransport(
    routes: StoreRoutes,
    network: BlockTransport,
    chain: BlockTransport) extends BlockTransport {

  override def name: String = chain.name

  override def pathTo(address: BlockManagerId): String = chain.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    val (elsewhere, own) = blockIds.partition(routes.homes.contains)
    if (own.nonEmpty) chain.fetch(address, own, listener, downloads)
    if (elsewhere.nonEmpty) {
      network.fetch(address, elsewhere, new TransportListener {
        override def onFetched(id: BlockId, buf: ManagedBuffer, via: String): Unit =
          listener.onFetched(id, buf, via)
        override def onFailed(id: BlockId, e: Throwable): Unit =
          BlockTransport.fallBack(chain, routes.homes(id), Seq(id -> e), listener, downloads)
        override def onFellBack(id: BlockId, e: Throwable): Unit = listener.onFellBack(id, e)
      }, downloads)
    }
  }

  // Only the map output's executor has the checksum file.
  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause =
    chain.diagnoseCorruption(routes.ownerOf(block, address), block, checksum, algorithm)
}
