package org.apache.spark.shuffle.adaptive.push.reduce

import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}

/**
 * Reads merged chunks through Spark's block server (`network`), whose resolver serves them from
 * the owner's [[MergeStore]] (the files of an owner on this host do not hold them), and every
 * other block through `chain`, as mode=pull reads it.
 */
private[spark] final class MergedTransport(network: BlockTransport, chain: BlockTransport)
    extends BlockTransport {

  override def name: String = chain.name

  override def pathTo(address: BlockManagerId): String = chain.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    // Spark's fetch protocol takes batch blocks or single ones in a request, never both.
    val (merged, files) = blockIds.partition(BlockMessage.isRequest)
    if (files.nonEmpty) chain.fetch(address, files, listener, downloads)
    if (merged.nonEmpty) network.fetch(address, merged, listener, downloads)
  }

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause = chain.diagnoseCorruption(address, block, checksum, algorithm)
}
