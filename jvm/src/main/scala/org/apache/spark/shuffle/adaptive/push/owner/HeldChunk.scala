package org.apache.spark.shuffle.adaptive.push.owner

import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.push.protocol.MergedChunk
import org.apache.spark.shuffle.adaptive.transport.{ExposedBuffer, RemoteMemory, RemoteRegion}

/**
 * One chunk of a merged partition as its owner holds it: its blocks back to back in one direct
 * buffer of its own (the arena), or a segment of the shuffle's spill file, or handed off to a
 * peer, or released (its blocks are in their map outputs' files). Callers hold its shuffle's lock.
 *
 * Blocks are copied into the arena as they are merged, so a chunk costs one allocation per
 * doubling of its size, not one per block (a 128 MiB shuffle of 512 x 512 partitions pushes
 * blocks of 512 bytes: a direct buffer each was most of the owners' merging and GC), and it is
 * served, spilled, handed off and exposed as the one buffer it is. The arena's capacity is what
 * the chunk holds in memory ([[memoryBytes]]); it starts at its first block's length and
 * doubles, never past the chunk size, so at most half of it is unused (where memory is short it
 * grows by just what a block needs instead). The arena's memory is freed as soon as neither the
 * chunk nor an answer serving it holds it ([[Arena]]).
 *
 * @param held the bytes of direct memory the store's arenas hold
 */
private[owner] final class HeldChunk(val id: Int, val partition: Int, held: AtomicLong) {
  private[this] var arena: Arena = _
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

  /** Released after its partition was read: its blocks are read from their files. */
  var released = false

  def inMemory: Boolean = onDisk.isEmpty && hostedAt.isEmpty && !released

  /** Bytes of memory the chunk holds: its arena's capacity while it is in memory. */
  def memoryBytes: Long = if (inMemory && arena != null) arena.buffer.capacity.toLong else 0L

  def region: Option[RemoteRegion] = exposure.map(_.region)

  /**
   * The arena's capacity once `length` more bytes joined it, where it doubles: its first block's
   * length, then twice as much each time, never past the chunk size unless one block is larger.
   */
  def doubledCapacityFor(length: Long, chunkSize: Long): Long =
    if (arena != null && bytes + length <= arena.buffer.capacity) arena.buffer.capacity
    else math.max(bytes + length, math.min(chunkSize, 2L * memoryBytes))

  /** Copies `block` to the chunk's end, into an arena of `capacity` bytes if it needs a new one. */
  def copyIn(mapId: Long, block: ByteBuffer, capacity: Long): Unit = {
    val length = block.remaining
    if (arena == null || bytes + length > arena.buffer.capacity) {
      val grown = new Arena(ByteBuffer.allocateDirect(capacity.toInt), held)
      if (arena != null) grown.buffer.put(content)
      letGo()
      arena = grown
    }
    arena.buffer.put(bytes.toInt, block, block.position(), length)
    record(mapId, length)
  }

  /**
   * Holds `block`, all of a direct buffer `ByteBuffer.allocateDirect` gave (its capacity is the
   * block's length), as the chunk's arena: no copy.
   */
  def hold(mapId: Long, block: ByteBuffer): Unit = {
    arena = new Arena(block, held)
    record(mapId, block.remaining)
  }

  /** Drops the arena: freed now, or once the last answer serving it is done. */
  private def letGo(): Unit = if (arena != null) {
    arena.release()
    arena = null
  }

  private def record(mapId: Long, length: Int): Unit = {
    if (blocks == mapIds.length) {
      mapIds = java.util.Arrays.copyOf(mapIds, 2 * blocks)
      lengths = java.util.Arrays.copyOf(lengths, 2 * blocks)
    }
    mapIds(blocks) = mapId
    lengths(blocks) = length
    blocks += 1
    bytes += length
  }

  /** The merged bytes in memory, no copy. */
  private def content: ByteBuffer = arena.buffer.duplicate().position(0).limit(bytes.toInt)

  /**
   * Lets peers read the bytes in memory one-sided: the arena is one buffer already. An exposed
   * chunk keeps its arena until [[drop]] (it is sealed, and never leaves memory).
   */
  def expose(remote: RemoteMemory): Unit = exposure = Some(remote.expose(content))

  def movedTo(file: SpillFile, offset: Long): Unit = {
    onDisk = Some((file, offset))
    letGo()
  }

  def release(): Unit = {
    released = true
    letGo()
  }

  def hostedBy(peer: BlockManagerId): Unit = {
    hostedAt = Some(peer)
    letGo()
  }

  /** Its shuffle was removed: the chunk holds nothing from now on. */
  def drop(): Unit = {
    // The node may have stopped first, with the executor: its registrations went with it.
    try exposure.foreach(_.close())
    catch { case NonFatal(_) => }
    exposure = None
    letGo()
  }

  /**
   * The chunk's bytes to serve: a view of them in memory, no copy, holding the arena until
   * released; or the file segment that holds them.
   */
  def data: ManagedBuffer = onDisk match {
    case Some((file, offset)) => file.segment(offset, bytes)
    case None if arena != null => arena.view(content)
    case None => new NioManagedBuffer(ByteBuffer.allocate(0))
  }

  /** The bytes in memory, for a write that ends before the chunk's lock is released. */
  def inMemoryBytes: ByteBuffer =
    if (arena == null) ByteBuffer.allocate(0) else content.asReadOnlyBuffer()

  def describe: MergedChunk =
    MergedChunk(
      id,
      partition,
      java.util.Arrays.copyOf(mapIds, blocks),
      java.util.Arrays.copyOf(lengths, blocks),
      hostedAt,
      region)
}
