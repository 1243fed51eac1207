package org.apache.spark.shuffle.adaptive.push.owner

import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.memory.{MemoryGrant, SpillFile}
import org.apache.spark.shuffle.adaptive.push.protocol.{MergedChunk, MergedPartition, RunUpload}

/**
 * The merged partitions of one shuffle; callers hold its lock.
 *
 * @param direct the bytes of direct memory the store's chunks hold ([[Arena]])
 * @param sslChunkSize the pieces an answer of several parts is sent in under TLS
 */
private[owner] final class ShuffleMerges(direct: AtomicLong, sslChunkSize: Int) {
  // By partition id, grown to the highest merged so far: partition ids are dense, and this is
  // looked up for every block merged (a hash map boxed each id).
  private[this] var partitions = new Array[PartitionMerge](0)
  private[this] val chunks = mutable.ArrayBuffer.empty[HeldChunk]
  private[this] val hosted = mutable.HashMap.empty[(Int, Int), Arena]
  // The chunks of partitions as they were sealed, which may be released (see releaseSealed):
  // a queue, so that a store looking for room does not go through every chunk it holds.
  private[this] val sealedInMemory = new java.util.ArrayDeque[HeldChunk]

  /** Bytes held in memory, other owners' chunks included. */
  var bytes = 0L
  var removed = false

  /**
   * Merges `block` of map output `mapId` into `partition`'s open chunk, or into a new chunk when
   * it does not fit there (`whole`: a new chunk holds `block` itself, no copy), taking what it
   * needs of `grant`; false if it was not merged (sealed, merged already, or no memory).
   */
  def append(
      partition: Int,
      mapId: Long,
      block: ByteBuffer,
      whole: Boolean,
      chunkSize: Long,
      grant: MemoryGrant): Boolean = {
    val merge = mergeOf(partition)
    if (merge.isSealed || merge.mapIds.contains(mapId)) return false
    val length = block.remaining.toLong
    val open = merge.open.filter(c => c.bytes + length <= chunkSize && !whole)
    val chunk = open.getOrElse(new HeldChunk(chunks.size, partition, direct))
    val taken =
      if (whole) {
        grant.take(length, length)
        chunk.hold(mapId, block)
        length
      } else {
        // Doubling where memory allows; where it does not, just what the block needs, which
        // its run reserved.
        val before = chunk.memoryBytes
        val doubled = chunk.doubledCapacityFor(length, chunkSize)
        val capacity =
          if (doubled <= before || grant.take(doubled - before, length)) doubled
          else if (grant.take(chunk.bytes + length - before, length)) chunk.bytes + length
          else return false
        chunk.copyIn(mapId, block, capacity)
        chunk.memoryBytes - before
      }
    if (open.isEmpty) {
      chunks += chunk
      merge.chunks += chunk
    }
    if (!whole) merge.open = if (chunk.bytes < chunkSize) Some(chunk) else None
    merge.mapIds.addLong(mapId)
    merge.bytes += length
    bytes += taken
    true
  }

  private def mergeOf(partition: Int): PartitionMerge = {
    if (partition >= partitions.length) {
      partitions =
        java.util.Arrays.copyOf(partitions, math.max(partition + 1, 2 * partitions.length))
    }
    if (partitions(partition) == null) partitions(partition) = new PartitionMerge
    partitions(partition)
  }

  def isSealed(partition: Int): Boolean =
    partition < partitions.length && partitions(partition) != null && partitions(partition).isSealed

  /**
   * Holds `data` (all of a buffer `ByteBuffer.allocateDirect` gave), chunk `chunkId` of
   * `partition` from its owner; answers the bytes kept.
   */
  def host(partition: Int, chunkId: Int, data: ByteBuffer): Long =
    if (hosted.contains((partition, chunkId))) 0L
    else {
      hosted((partition, chunkId)) = new Arena(data, direct)
      bytes += data.remaining
      data.remaining
    }

  def hostedBytes(partition: Int, chunkId: Int): Option[ManagedBuffer] =
    hosted.get((partition, chunkId)).map(arena => arena.view(arena.buffer.duplicate()))

  /**
   * Closes `chunk` for its hand-off: its upload (a run header, then a view of its bytes),
   * unless it is no longer in memory.
   */
  def leave(chunk: HeldChunk): Option[ManagedBuffer] =
    if (removed || !chunk.inMemory || chunk.leaving) None
    else {
      val merge = partitions(chunk.partition)
      if (merge.open.contains(chunk)) merge.open = None
      chunk.leaving = true
      val header = ByteBuffer.wrap(RunUpload.header(Array(chunk.bytes)))
      Some(new ServedParts(Seq(new NioManagedBuffer(header), chunk.data), sslChunkSize))
    }

  /** Answers the bytes that left memory: none if the shuffle went or a layout sealed the partition. */
  def handedOff(chunk: HeldChunk, peer: BlockManagerId): Long = {
    chunk.leaving = false
    if (removed || !chunk.inMemory || isSealed(chunk.partition)) 0L
    else {
      val freed = chunk.memoryBytes
      chunk.hostedBy(peer)
      bytes -= freed
      freed
    }
  }

  /** The chunks in memory, each with its partition's merged bytes. */
  def inMemory: Seq[(HeldChunk, Long)] =
    if (removed) Nil
    else chunks.iterator.filter(_.inMemory).map(c => c -> partitions(c.partition).bytes).toSeq

  /**
   * Writes `chunk` to `file` and drops it from memory (nothing more is appended to it); answers
   * the bytes that left memory.
   */
  def moveToDisk(chunk: HeldChunk, file: => SpillFile): Long =
    if (removed || !chunk.inMemory) 0L
    else {
      val merged = file
      val freed = chunk.memoryBytes
      chunk.movedTo(merged, merged.append(Seq(chunk.inMemoryBytes)))
      val merge = partitions(chunk.partition)
      if (merge.open.contains(chunk)) merge.open = None
      bytes -= freed
      freed
    }

  /**
   * Releases the chunks in memory of sealed partitions (those that no peer reads one-sided, and
   * not on their way to one), a partition's all at once (a layout lists none of a partition
   * that lost one), in the order their partitions were sealed, until `wanted` bytes of memory are
   * free; answers the bytes freed.
   */
  def releaseSealed(wanted: Long): Long = {
    var freed = 0L
    while (freed < wanted && !sealedInMemory.isEmpty) {
      val first = sealedInMemory.poll()
      if (!removed && first.inMemory) {
        partitions(first.partition).chunks.foreach { chunk =>
          if (chunk.inMemory && !chunk.leaving && chunk.region.isEmpty) {
            freed += chunk.memoryBytes
            bytes -= chunk.memoryBytes
            chunk.release()
          }
        }
      }
    }
    freed
  }

  /** Drops the chunks other owners handed off here; answers the bytes freed. */
  def releaseHosted(): Long = {
    val freed = hosted.valuesIterator.map(_.buffer.capacity.toLong).sum
    hosted.valuesIterator.foreach(_.release())
    hosted.clear()
    bytes -= freed
    freed
  }

  def summary: Seq[MergedPartition] = partitions.indices.iterator
    .map(p => (p, partitions(p)))
    .filter { case (_, merge) => merge != null && merge.bytes > 0 }
    .map { case (p, merge) =>
      // A copy: appends go on after the lock is released.
      val maps = new Roaring64NavigableMap
      maps.or(merge.mapIds)
      maps.runOptimize()
      MergedPartition(p, merge.bytes, merge.chunks.size, maps)
    }
    .toSeq
    .sortBy(_.partition)

  /**
   * Seals partitions `[start, end)`, hands `expose` their chunks in memory not exposed yet, and
   * lists their chunks: none of a partition one of whose chunks was released.
   */
  def seal(start: Int, end: Int, expose: HeldChunk => Unit): Seq[MergedChunk] =
    (start until end).flatMap { p =>
      val merge = mergeOf(p)
      if (!merge.isSealed) merge.chunks.foreach(c => if (c.inMemory) sealedInMemory.add(c))
      merge.isSealed = true
      merge.open = None
      if (!removed) {
        merge.chunks.filter(c => c.inMemory && !c.leaving && c.region.isEmpty).foreach(expose)
      }
      // A partition that lost a chunk from memory is read from its files whole: a read of
      // several of its chunks at once then never spans the gap.
      if (merge.chunks.exists(_.released)) Nil else merge.chunks.map(_.describe)
    }

  /** The shuffle was removed: every chunk lets its memory go; answers the bytes it held. */
  def drop(): Long = {
    removed = true
    val held = bytes
    chunks.foreach(_.drop())
    releaseHosted()
    bytes = 0L
    held
  }

  def range(start: Int, end: Int): Option[ManagedBuffer] =
    if (removed || !(start until end).forall(isSealed)) None
    else together((start until end).flatMap(p => partitions(p).chunks))

  def chunkRun(partition: Int, first: Int, until: Int): Option[ManagedBuffer] =
    if (removed || !isSealed(partition)) None
    else together(partitions(partition).chunks.filter(c => c.id >= first && c.id < until).toSeq)

  /** The bytes of `chunks` held here, back to back, unless one was released since its layout. */
  private def together(chunks: Seq[HeldChunk]): Option[ManagedBuffer] = {
    val held = chunks.filter(_.hostedAt.isEmpty)
    // A read is cut as its layout says: with a chunk released since, it is read from files.
    if (held.isEmpty || held.exists(_.released)) None
    else Some(new ServedParts(held.map(_.data), sslChunkSize))
  }

  def bytesOf(chunkId: Int): Option[ManagedBuffer] =
    chunks.lift(chunkId).filter(c => c.hostedAt.isEmpty && !c.released).map { c =>
      // On disk, read here whole as ServedParts reads a segment: neither mapped nor via a
      // channel's cached direct buffer.
      if (c.inMemory) c.data else new ServedParts(Seq(c.data), sslChunkSize)
    }
}
