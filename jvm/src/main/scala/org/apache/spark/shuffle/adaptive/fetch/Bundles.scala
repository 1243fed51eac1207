package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.flow.BlockRef
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage

/**
 * The bundles a reduce task reads ([[BundledRead]]: merged chunks, combined records), kept apart
 * from its fetcher's flow control as Spark keeps merged blocks in its PushBasedFetchHelper: which
 * requests are bundles, what an arrived one serves (its parts in turn, each held by its own
 * reference to the bundle's buffer), and the blocks read from their files in place of one that
 * failed or is not what was asked for. The task thread alone calls it.
 *
 * @param reader the executor the task runs on, which the parts' counters compare holders with
 */
private[fetch] final class Bundles(
    reads: Map[(BlockManagerId, BlockId), BundledRead],
    reader: BlockManagerId) {

  private final class Queued(
      val read: BundledRead,
      val part: BundledPart,
      val slice: ManagedBuffer,
      val holder: BlockManagerId)

  private[this] val parts = mutable.Queue.empty[Queued]

  def isEmpty: Boolean = reads.isEmpty

  def contains(address: BlockManagerId, id: BlockId): Boolean = reads.contains((address, id))

  /** Whether some bundle holds blocks read in their place (see [[BundledRead.replacesBlocks]]). */
  val replaceBlocks: Boolean = reads.valuesIterator.exists(_.replacesBlocks)

  /** Parts of arrived bundles not served yet, which go before any other block. */
  def hasParts: Boolean = parts.nonEmpty

  /** The bundle `id` of `address` could not be fetched: the blocks to read instead. */
  def failed(
      address: BlockManagerId,
      id: BlockId,
      cause: Throwable): Seq[(BlockManagerId, BlockRef)] =
    reads((address, id))
      .instead(s"Could not fetch ${BlockMessage.describe(id)} from $address", Some(cause))

  /**
   * The bundle `id` of `address` arrived as `buf`: the read and what its bytes serve, or (its
   * bytes not what was asked for, `buf` released) the blocks to read instead.
   */
  def arrived(address: BlockManagerId, id: BlockId, buf: ManagedBuffer)
      : Either[Seq[(BlockManagerId, BlockRef)], (BundledRead, BundledRead.Cut)] = {
    val read = reads((address, id))
    val cut =
      try read.cut(buf)
      catch { case NonFatal(e) => Left(s"${e.getClass.getSimpleName}: ${e.getMessage}") }
    cut.map(read -> _).left.map { why =>
      buf.release()
      read.instead(
        s"Read ${BlockMessage.describe(id)} from $address (${buf.size} bytes) cannot be " +
          s"served: $why",
        None)
    }
  }

  /** Queues each of `cut`'s parts of `buf`, held at `holder`, to be served in turn. */
  def queue(
      read: BundledRead,
      cut: BundledRead.Cut,
      buf: ManagedBuffer,
      holder: BlockManagerId): Unit =
    try
      BundleSlice.parts(buf, cut.parts).zip(cut.parts).foreach { case (slice, part) =>
        parts += new Queued(read, part, slice, holder)
      }
    finally buf.release()

  /** The next part to serve, and its bytes (the caller's to release); counted as served. */
  def nextPart(): (BundledPart, ManagedBuffer) = {
    val next = parts.dequeue()
    next.read.served(next.part, next.holder, reader)
    (next.part, next.slice)
  }

  /** `parts` of `read`, held at `holder`, served as one stream. */
  def servedJoined(read: BundledRead, parts: Seq[BundledPart], holder: BlockManagerId): Unit =
    parts.foreach(read.served(_, holder, reader))

  /** Releases the parts not served. */
  def release(): Unit = {
    parts.foreach(_.slice.release())
    parts.clear()
  }
}
