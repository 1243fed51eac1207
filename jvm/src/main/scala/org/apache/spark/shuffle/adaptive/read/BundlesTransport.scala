package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}

/**
 * Reads the bundles a task reads ([[BundledRead]]: merged chunks, combined records) through
 * `network` (Spark's block server, whose resolver answers them from memory the files of an
 * executor on this host do not hold; or one-sided where their holder exposed them), and every
 * other block through `chain`, as a task without them reads it.
 */
private[spark] final class BundlesTransport(network: BlockTransport, chain: BlockTransport)
    extends BlockTransport {

  override def name: String = chain.name

  override def pathTo(address: BlockManagerId): String = chain.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    // Spark's fetch protocol takes batch blocks or single ones in a request, never both.
    val (bundles, files) = blockIds.partition(BlockMessage.isMessage)
    if (files.nonEmpty) chain.fetch(address, files, listener, downloads)
    if (bundles.nonEmpty) network.fetch(address, bundles, listener, downloads)
  }

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause = chain.diagnoseCorruption(address, block, checksum, algorithm)
}
