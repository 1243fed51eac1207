package org.apache.spark.shuffle.adaptive.store

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

/**
 * Reads the blocks other executors' stores hold through Spark's block server (`network`), whose
 * resolver serves them from the store's memory, rather than the way `chain` reads the files of
 * that executor (host-local reads would go to the file even where the store holds the block);
 * a block the store cannot serve (its executor is gone) is read from its map output's executor
 * through `chain` instead. Every other block goes to `chain` unchanged.
 */
private[spark] final class StoreTransport(
    routes: StoreRoutes,
    network: BlockTransport,
    chain: BlockTransport)
    extends BlockTransport {

  override def name: String = chain.name

  override def pathTo(address: BlockManagerId): String = chain.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    val (stored, files) = blockIds.partition(routes.stored)
    if (files.nonEmpty) chain.fetch(address, files, listener, downloads)
    if (stored.nonEmpty) {
      network.fetch(
        address,
        stored,
        new TransportListener {
          override def onFetched(id: BlockId, buf: ManagedBuffer, via: String): Unit =
            listener.onFetched(id, buf, via)
          override def onFailed(id: BlockId, e: Throwable): Unit =
            BlockTransport.fallBack(
              chain,
              routes.ownerOf(id, address),
              Seq(id -> e),
              listener,
              downloads)
          override def onFellBack(id: BlockId, e: Throwable): Unit = listener.onFellBack(id, e)
        },
        downloads)
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
