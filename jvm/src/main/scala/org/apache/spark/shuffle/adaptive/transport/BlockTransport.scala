package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.shuffle.{BlockFetchingListener, DownloadFileManager}
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}

/**
 * How a reduce task reaches the shuffle blocks of another executor. Implementations call the
 * listener exactly once per requested block, from any thread.
 */
private[spark] trait BlockTransport {

  /** Short name used in metrics, e.g. "netty". */
  def name: String

  /**
   * Starts fetching `blockIds` from `address`. With a `downloads` manager the blocks are
   * streamed to temporary files instead of memory.
   */
  def fetch(
      address: BlockManagerId,
      blockIds: Array[String],
      listener: BlockFetchingListener,
      downloads: Option[DownloadFileManager]): Unit

  /** Asks the serving executor why a block's data did not match its checksum. */
  def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause
}
