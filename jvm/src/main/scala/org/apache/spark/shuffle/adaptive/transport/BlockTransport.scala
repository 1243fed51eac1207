package org.apache.spark.shuffle.adaptive.transport

import scala.util.control.NonFatal

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

private[spark] object BlockTransport {

  /**
   * Hands the blocks a transport could not serve, each with why, to the `next` one in the chain:
   * each is reported as fallen back, then fetched through `next` (failing if `next` throws).
   */
  def fallBack(
      next: BlockTransport,
      address: BlockManagerId,
      unread: Seq[(BlockId, Throwable)],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = if (unread.nonEmpty) {
    unread.foreach { case (id, cause) => listener.onFellBack(id, cause) }
    val ids = unread.map(_._1)
    try next.fetch(address, ids, listener, downloads)
    catch {
      case NonFatal(e) => ids.foreach(listener.onFailed(_, e))
    }
  }
}
