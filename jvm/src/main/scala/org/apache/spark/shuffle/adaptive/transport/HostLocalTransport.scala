package org.apache.spark.shuffle.adaptive.transport

import scala.collection.mutable
import scala.util.{Failure, Success}
import scala.util.control.NonFatal

import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

/**
 * Reads the blocks of executors on this host (`spark.shuffle.readHostLocalDisk`) straight from
 * their shuffle files, as Spark's fetcher does, and sends every other request through `network`.
 * A block whose executor's dirs cannot be had, or whose files cannot be read, goes over the
 * network too (reported through [[TransportListener.onFellBack]]), so a host-local read never
 * fails a fetch that the network could serve.
 *
 * Host-local blocks are file segments: nothing is read into memory until the task opens them.
 */
private[spark] final class HostLocalTransport(
    selfHost: String,
    dirs: HostLocalDirs,
    network: BlockTransport)
    extends BlockTransport {

  override def name: String = HostLocalTransport.Name

  private def onThisHost(address: BlockManagerId): Boolean = address.host == selfHost

  override def pathTo(address: BlockManagerId): String =
    if (onThisHost(address)) name else network.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    def overNetwork(unread: Seq[(BlockId, Throwable)]): Unit =
      BlockTransport.fallBack(network, address, unread, listener, downloads)

    if (!onThisHost(address)) {
      network.fetch(address, blockIds, listener, downloads)
    } else {
      dirs.lookUp(address) {
        case Success(localDirs) =>
          val unread = mutable.ArrayBuffer.empty[(BlockId, Throwable)]
          blockIds.foreach { id =>
            val buf =
              try dirs.read(id, localDirs)
              catch {
                case NonFatal(e) =>
                  unread += id -> e
                  null
              }
            if (buf != null) listener.onFetched(id, buf, name)
          }
          overNetwork(unread.toSeq)
        case Failure(e) => overNetwork(blockIds.map(_ -> e))
      }
    }
  }

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause =
    network.diagnoseCorruption(address, block, checksum, algorithm)
}

private[spark] object HostLocalTransport {
  val Name = "host-local"
}
