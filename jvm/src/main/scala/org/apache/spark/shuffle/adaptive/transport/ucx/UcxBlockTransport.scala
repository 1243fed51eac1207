package org.apache.spark.shuffle.adaptive.transport.ucx

import scala.collection.mutable
import scala.util.{Failure, Success}
import scala.util.control.NonFatal

import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, RemoteRegion, TransportListener}

/**
 * Reads blocks of peers that serve their map outputs through UCX with one-sided reads straight
 * out of the peer's memory-mapped data files: the peer runs no request handler, copies nothing
 * and serializes nothing. Blocks of one map output that lie next to each other in its file are
 * one read. A block of `exposed` (at its holder: a merged chunk) is one read of its region.
 * Peers without a UCX worker, map outputs without a region, and requests large enough for Spark
 * to stream them to disk (`downloads`) go to `fallback`.
 *
 * The bytes are those of the file: compressed, checksummed and, with I/O encryption on,
 * encrypted as written; the fetcher unwraps and checks them as it does Netty's.
 */
private[spark] final class UcxBlockTransport(
    node: UcxNode,
    directory: UcxDirectory,
    pool: UcxBufferPool,
    fallback: BlockTransport,
    exposed: Map[(BlockManagerId, BlockId), RemoteRegion] = Map.empty)
    extends BlockTransport {

  override def name: String = UcxBlockTransport.Name

  override def pathTo(address: BlockManagerId): String =
    if (directory.worker(address.executorId).isDefined) name else fallback.pathTo(address)

  override def fetch(
      address: BlockManagerId,
      blockIds: Seq[BlockId],
      listener: TransportListener,
      downloads: Option[DownloadFileManager]): Unit = {
    val worker = directory.worker(address.executorId)
    if (worker.isEmpty || downloads.isDefined) {
      fallback.fetch(address, blockIds, listener, downloads)
    } else {
      val whole = blockIds.flatMap { id =>
        exposed.get((address, id)).flatMap(UcxBlockTransport.wholeRead(id, _)).map(id -> _)
      }.toMap
      // Blocks that are neither exposed nor of a map output are never read through UCX.
      val (mapOutputs, others) = blockIds
        .filterNot(whole.contains)
        .partition(UcxRegion.mapOutputOf(_).isDefined)
      if (others.nonEmpty) fallback.fetch(address, others, listener, downloads)
      val (reads, unread) = plan(address.executorId, mapOutputs)
      (whole.values ++ reads).foreach(start(address.executorId, worker.get, _, listener))
      val why = new IllegalStateException(s"no UCX region of this map output on $address")
      BlockTransport.fallBack(fallback, address, unread.map(_ -> why), listener, downloads)
    }
  }

  /** The reads that fetch `blockIds`, contiguous blocks of a map output merged, and the rest. */
  private def plan(
      executorId: String,
      blockIds: Seq[BlockId]): (Seq[UcxBlockTransport.Read], Seq[BlockId]) = {
    val unread = mutable.ArrayBuffer.empty[BlockId]
    val byMapOutput = mutable.LinkedHashMap.empty[(Int, Long), mutable.ArrayBuffer[BlockId]]
    blockIds.foreach { id =>
      UcxRegion.mapOutputOf(id) match {
        case Some(mapOutput) => byMapOutput.getOrElseUpdate(mapOutput, mutable.ArrayBuffer()) += id
        case None => unread += id
      }
    }
    val reads = byMapOutput.groupBy(_._1._1).toSeq.flatMap { case (shuffleId, outputs) =>
      val regions = directory.regions(executorId, shuffleId, outputs.keys.map(_._2).toSeq)
      outputs.toSeq.flatMap { case ((_, mapId), ids) =>
        regions.get(mapId) match {
          case Some(region) =>
            val ranged = ids.flatMap(id =>
              region.rangeOf(id).collect {
                case (offset, length) if length <= UcxBlockTransport.MaxRead => (id, offset, length)
              })
            unread ++= ids.filterNot(id => ranged.exists(_._1 == id))
            UcxBlockTransport.merge(shuffleId, mapId, region, ranged.toSeq)
          case None =>
            unread ++= ids
            Nil
        }
      }
    }
    (reads, unread.toSeq)
  }

  private def start(
      executorId: String,
      worker: Array[Byte],
      read: UcxBlockTransport.Read,
      listener: TransportListener): Unit = {
    val buffer =
      try pool.acquire(read.length.toInt)
      catch {
        case NonFatal(e) =>
          read.blocks.foreach(b => listener.onFailed(b.id, e))
          return
      }
    node.read(
      executorId,
      worker,
      (read.shuffleId, read.mapId),
      read.region.rkey,
      read.region.address + read.offset,
      buffer.address,
      read.length) {
      case Success(_) =>
        read.blocks.foreach { block =>
          val buf =
            new UcxBlockBuffer(buffer, (block.offset - read.offset).toInt, block.length.toInt)
          try listener.onFetched(block.id, buf, name)
          finally buf.release()
        }
        buffer.release()
      case Failure(e) =>
        buffer.release()
        directory.forgetExecutor(executorId)
        read.blocks.foreach(b => listener.onFailed(b.id, e))
    }
  }

  override def diagnoseCorruption(
      address: BlockManagerId,
      block: ShuffleBlockId,
      checksum: Long,
      algorithm: String): Cause =
    fallback.diagnoseCorruption(address, block, checksum, algorithm)
}

private[spark] object UcxBlockTransport {

  val Name = "ucx"

  /** The largest read: the largest direct buffer a JVM allocates. */
  val MaxRead: Long = Int.MaxValue - 8

  final case class Block(id: BlockId, offset: Long, length: Long)

  /**
   * The read of a block that is all of `region`. Its remote key is kept as the region of
   * `(shuffle, mapId)` of the block's id: ids of exposed blocks are negative, unlike any map
   * output's, and unique at their holder.
   */
  def wholeRead(id: BlockId, region: RemoteRegion): Option[Read] = id match {
    case ShuffleBlockBatchId(shuffleId, mapId, _, _) if region.length <= MaxRead =>
      Some(
        Read(
          shuffleId,
          mapId,
          UcxRegion(region.address, region.rkey, Array(0L, region.length)),
          0L,
          region.length,
          Seq(Block(id, 0L, region.length))))
    case _ => None
  }

  /** One one-sided read: `length` bytes at `offset` of a region, holding `blocks`. */
  final case class Read(
      shuffleId: Int,
      mapId: Long,
      region: UcxRegion,
      offset: Long,
      length: Long,
      blocks: Seq[Block])

  /**
   * Groups the blocks `(id, offset, length)` of one map output into reads of adjacent blocks,
   * each at most `maxLength` bytes (a block larger than that is read alone).
   */
  def merge(
      shuffleId: Int,
      mapId: Long,
      region: UcxRegion,
      blocks: Seq[(BlockId, Long, Long)],
      maxLength: Long = MaxRead): Seq[Read] = {
    val reads = mutable.ArrayBuffer.empty[Read]
    var current = mutable.ArrayBuffer.empty[Block]
    def flush(): Unit = if (current.nonEmpty) {
      val start = current.head.offset
      val end = current.last.offset + current.last.length
      reads += Read(shuffleId, mapId, region, start, end - start, current.toSeq)
      current = mutable.ArrayBuffer.empty[Block]
    }
    blocks.sortBy(_._2).foreach { case (id, offset, length) =>
      val adjacent = current.nonEmpty &&
        current.last.offset + current.last.length == offset &&
        offset + length - current.head.offset <= maxLength
      if (!adjacent) flush()
      current += Block(id, offset, length)
    }
    flush()
    reads.toSeq
  }
}
