package org.apache.spark.shuffle.adaptive.read

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.{BatchFetch, CompositeRequests, ReadyBlock}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.BlockRef

/**
 * The bundles a reduce task reads ([[BundledRead]]: merged chunks, combined records), as the
 * fetcher's composite requests: what an arrived one serves (its parts in turn, each held by its
 * own reference to the bundle's buffer, or all of them as one stream where the serializer and
 * codec read blocks back to back: `concatenate`), and the blocks read from their files in place
 * of one that failed, is not what was asked for, or has a part found corrupt (as batch blocks
 * where the task fetches in `batch`es, never across blocks it does not read).
 *
 * @param reader the executor the task runs on, which the parts' counters compare holders with
 */
private[spark] final class Bundles(
    reads: Map[(BlockManagerId, BlockId), BundledRead],
    reader: BlockManagerId,
    batch: Boolean,
    concatenate: Boolean)
    extends CompositeRequests {

  private[this] val ready = mutable.Queue.empty[ReadyBlock]
  private[this] var unresolved = reads.size

  override def contains(address: BlockManagerId, id: BlockId): Boolean =
    reads.contains((address, id))

  // Blocks a bundle is read in place of leave gaps no batch may span.
  override val batchesSpanGaps: Boolean = !reads.valuesIterator.exists(_.replacesBlocks)

  override def left: Int = unresolved + ready.size

  override def nextReady(): Option[ReadyBlock] =
    if (ready.isEmpty) None else Some(ready.dequeue())

  override def failed(
      address: BlockManagerId,
      request: BlockRef,
      cause: Throwable): Seq[(BlockManagerId, BlockRef)] = {
    unresolved -= 1
    asRequested(
      reads((address, request.blockId)).instead(
        s"Could not fetch ${BlockMessage.describe(request.blockId)} from $address",
        Some(cause)))
  }

  /**
   * What it counts as read is its parts' bytes: the rest is its protocol's, or bytes no part
   * holds.
   */
  override def arrived(
      address: BlockManagerId,
      request: BlockRef,
      buf: ManagedBuffer,
      via: String): CompositeRequests.Arrival = {
    unresolved -= 1
    val read = reads((address, request.blockId))
    val cut =
      try read.cut(buf)
      catch { case NonFatal(e) => Left(s"${e.getClass.getSimpleName}: ${e.getMessage}") }
    cut match {
      case Left(why) =>
        buf.release()
        val instead = read.instead(
          s"Read ${BlockMessage.describe(request.blockId)} from $address (${buf.size} bytes) " +
            s"cannot be served: $why",
          None)
        CompositeRequests.Arrival(0, 0L, asRequested(instead))
      case Right(BundledRead.Cut(parts)) if parts.isEmpty =>
        buf.release()
        CompositeRequests.Arrival(0, 0L, Nil)
      case Right(BundledRead.Cut(parts)) =>
        try {
          if (concatenate && read.joinable && parts.size > 1) {
            ready += joined(request.blockId, read, parts, address, buf)
          } else {
            BundleSlice.parts(buf, parts).zip(parts).foreach { case (slice, part) =>
              ready += ReadyBlock(
                part.block.blockId,
                part.block,
                part.home,
                slice,
                asRequested(part.holds.map(part.home -> _)),
                () => s"${read.name(address)} (${part.block.blockId})",
                () => read.served(part, address, reader))
            }
          }
        } finally buf.release()
        CompositeRequests.Arrival(read.blocks, parts.iterator.map(_.length).sum, Nil)
    }
  }

  /**
   * All the parts as one stream, so decompression and deserialization start once per bundle
   * instead of once per block (see [[BatchFetch.concatenable]]). Found corrupt when opened, what
   * its parts hold is read from their map outputs, unless one is the only copy of what it holds.
   */
  private def joined(
      id: BlockId,
      read: BundledRead,
      parts: IndexedSeq[BundledPart],
      address: BlockManagerId,
      buf: ManagedBuffer): ReadyBlock = {
    val first = parts.head
    val again =
      if (parts.exists(_.holds.isEmpty)) Nil
      else asRequested(parts.flatMap(p => p.holds.map(p.home -> _)))
    ReadyBlock(
      id,
      first.block,
      first.home,
      BundleSlice.joined(buf, parts),
      again,
      () => s"${BlockMessage.describe(id)} from $address",
      () => parts.foreach(read.served(_, address, reader)))
  }

  private def asRequested(
      blocks: Seq[(BlockManagerId, BlockRef)]): Seq[(BlockManagerId, BlockRef)] =
    if (!batch) blocks
    else
      blocks.groupBy(_._1).toSeq.flatMap { case (home, refs) =>
        BatchFetch.merge(refs.map(_._2), acrossGaps = false).map(home -> _)
      }

  override def release(): Unit = {
    ready.foreach(_.buf.release())
    ready.clear()
  }
}
