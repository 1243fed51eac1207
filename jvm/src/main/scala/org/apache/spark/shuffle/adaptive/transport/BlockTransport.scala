package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

/**
 * How a reduce task reaches the shuffle blocks of another executor. [[TransportFactory]] chains
 * them so that each source is read the best way it offers, falling back block by block.
 */
private[spark] trait BlockTransport {

  /** Short name used in metrics, e.g. "netty". */
  def name: String

  /** The path a request to `address` takes first (this transport's name or one it delegates to). */
  def pathTo(address: BlockManagerId): String = name

  /**
   * Starts fetching `blockIds` from `address`, reporting each block to `listener` exactly once.
   * With a `downloads` manager, blocks that cross the network may be streamed to temporary files
   * instead of memory.
   */
  def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit

  /**
   * Asks the serving executor why a block's data did not match its checksum: a control call,
   * which every transport makes over Spark's RPC.
   */
  def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause
}
