package org.apache.spark.shuffle.adaptive.read

import scala.util.control.NonFatal

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.{BatchFetch, BlockRef, FetchItem, ReadyBlock}

/**
 * A bundle a reduce task on `reader` reads ([[BundledRead]]: a merged chunk, combined records), as
 * the fetcher requests it: once it arrives, its parts are ready in turn, each held by its own
 * reference to the bundle's buffer, or all of them as one stream where the serializer and codec
 * read blocks back to back (`concatenate`). What it holds is read from its map outputs' files in
 * place of one that failed, is not what was asked for, or has a part found corrupt (as batch
 * blocks where the task fetches in `batch`es, never across blocks it does not read).
 */
private[read] final class BundleRequest(
    read: BundledRead,
    reader: BlockManagerId,
    batch: Boolean,
    concatenate: Boolean)
    extends FetchItem {

  override def blockId: BlockId = read.id

  override def size: Long = read.size

  override def name(address: BlockManagerId): String = read.name(address)

  override def failed(address: BlockManagerId, why: String, cause: Throwable): Seq[FetchItem.At] =
    asRequested(read.instead(why, Some(cause)))

  /**
   * What it counts as read is its parts' bytes: the rest is its protocol's, or bytes no part
   * holds.
   */
  override def arrived(
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String): FetchItem.Arrival = {
    val cut =
      try read.cut(buf)
      catch { case NonFatal(e) => Left(s"${e.getClass.getSimpleName}: ${e.getMessage}") }
    cut match {
      case Left(why) =>
        buf.release()
        val instead = read.instead(
          s"Read ${read.name(address)} (${buf.size} bytes) " +
            s"cannot be served: $why",
          None)
        FetchItem.Arrival(Nil, 0, 0L, asRequested(instead))
      case Right(BundledRead.Cut(parts)) if parts.isEmpty =>
        buf.release()
        FetchItem.Arrival(Nil, 0, 0L, Nil)
      case Right(BundledRead.Cut(parts)) =>
        val ready =
          try {
            if (concatenate && read.joinable && parts.size > 1) Seq(joined(parts, address, buf))
            else
              BundleSlice.parts(buf, parts).zip(parts).map { case (slice, part) =>
                ReadyBlock(
                  part.block.blockId,
                  part.block,
                  part.home,
                  slice,
                  asRequested(part.holds.map(part.home -> _)),
                  onlyCopy = part.holds.isEmpty,
                  () => s"${read.name(address)} (${part.block.blockId})",
                  () => read.served(part, address, reader))
              }
          } finally buf.release()
        FetchItem.Arrival(ready, read.blocks, parts.iterator.map(_.length).sum, Nil)
    }
  }

  /**
   * All the parts as one stream, so decompression and deserialization start once per bundle
   * instead of once per block (see [[BatchFetch.concatenable]]). Found corrupt when opened, what
   * its parts hold is read from their map outputs, unless one is the only copy of what it holds.
   */
  private def joined(
      parts: IndexedSeq[BundledPart],
      address: BlockManagerId,
      buf: ManagedBuffer): ReadyBlock = {
    val first = parts.head
    val onlyCopy = parts.exists(_.holds.isEmpty)
    ReadyBlock(
      read.id,
      first.block,
      first.home,
      BundleSlice.joined(buf, parts),
      if (onlyCopy) Nil else asRequested(parts.flatMap(p => p.holds.map(p.home -> _))),
      onlyCopy,
      () => read.name(address),
      () => parts.foreach(read.served(_, address, reader)))
  }

  private def asRequested(blocks: Seq[(BlockManagerId, BlockRef)]): Seq[FetchItem.At] =
    if (!batch) blocks
    else
      blocks.groupBy(_._1).toSeq.flatMap { case (home, refs) =>
        BatchFetch.merge(refs.map(_._2), acrossGaps = false).map(home -> _)
      }
}
