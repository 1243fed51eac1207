package org.apache.spark.shuffle.adaptive.push.owner

import java.nio.ByteBuffer

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.netty.buffer.Unpooled

import org.apache.spark.network.buffer.{ManagedBuffer, NettyManagedBuffer}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.protocol.MergedChunk
import org.apache.spark.shuffle.adaptive.transport.{ExposedBuffer, RemoteMemory, RemoteRegion}

/**
 * One chunk of a merged partition as its owner holds it: its blocks' buffers in memory, or a
 * segment of the shuffle's spill file, or handed off to a peer. Callers hold its shuffle's lock.
 */
private[owner] final class HeldChunk(val id: Int, val partition: Int) {
  val slices = mutable.ArrayBuffer.empty[ByteBuffer]
  // Growable arrays rather than ArrayBuilders, whose result() may be taken only once: a chunk
  // is described to every layout request of its partition.
  private[this] var mapIds = new Array[Long](4)
  private[this] var lengths = new Array[Long](4)
  private[this] var blocks = 0
  private[this] var onDisk: Option[(SpillFile, Long)] = None
  private[this] var exposure: Option[ExposedBuffer] = None
  var hostedAt: Option[BlockManagerId] = None
  var bytes = 0L

  /** On its way to a peer: neither appended to nor moved to disk. */
  var leaving = false

  def inMemory: Boolean = onDisk.isEmpty && hostedAt.isEmpty

  def region: Option[RemoteRegion] = exposure.map(_.region)

  /**
   * Lets peers read the bytes in memory one-sided, as one buffer: its blocks are buffers of their
   * own, so they are copied into one unless a single direct buffer holds them. The copy is not
   * reserved again: the blocks' buffers go with it.
   */
  def expose(remote: RemoteMemory): Unit = {
    val whole = slices.toSeq match {
      case Seq(only) if only.isDirect => only
      case many =>
        val copy = ByteBuffer.allocateDirect(bytes.toInt)
        many.foreach(slice => copy.put(slice.duplicate()))
        copy.flip()
    }
    slices.clear()
    slices += whole
    exposure = Some(remote.expose(whole))
  }

  def unexpose(): Unit = {
    // The node may have stopped first, with the executor: its registrations went with it.
    try exposure.foreach(_.close())
    catch { case NonFatal(_) => }
    exposure = None
  }

  def movedTo(file: SpillFile, offset: Long): Unit = {
    onDisk = Some((file, offset))
    slices.clear()
  }

  def hostedBy(peer: BlockManagerId): Unit = {
    hostedAt = Some(peer)
    slices.clear()
  }

  /** A view of the bytes in memory, no copy, or the file segment that holds them. */
  def data: ManagedBuffer = onDisk match {
    case Some((file, offset)) => file.segment(offset, bytes)
    case None => new NettyManagedBuffer(Unpooled.wrappedBuffer(buffers: _*))
  }

  /** Views of the bytes in memory, or the bytes read from disk. */
  def buffers: Seq[ByteBuffer] = onDisk match {
    case Some(_) => Seq(data.nioByteBuffer())
    case None => slices.map(_.asReadOnlyBuffer()).toSeq
  }

  def add(mapId: Long, slice: ByteBuffer): Unit = {
    slices += slice
    if (blocks == mapIds.length) {
      mapIds = java.util.Arrays.copyOf(mapIds, 2 * blocks)
      lengths = java.util.Arrays.copyOf(lengths, 2 * blocks)
    }
    mapIds(blocks) = mapId
    lengths(blocks) = slice.remaining.toLong
    blocks += 1
    bytes += slice.remaining
  }

  def describe: MergedChunk =
    MergedChunk(
      id,
      partition,
      java.util.Arrays.copyOf(mapIds, blocks),
      java.util.Arrays.copyOf(lengths, blocks),
      hostedAt,
      region)
}
