package org.apache.spark.shuffle.adaptive.push.owner

import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.shuffle.adaptive.memory.MemoryBound

/**
 * What leaves an owner's memory, and when: the merge store holds at most `memory.capacity` bytes
 * of direct memory. A run is merged only once its bytes are reserved ([[reserve]]); where they do
 * not fit, chunks whose partitions were read already are released first, of shuffles older than
 * the one merging ([[releaseRead]]), then chunks move to disk (one [[SpillFile]] per shuffle,
 * `disk`), the hottest partitions' first. Once a stage that read a shuffle completed, the chunks
 * of its sealed partitions go at once ([[readBy]]). Past [[handOffMark]] chunks of unread partitions are
 * handed to peers with room ([[PeerHandOffs]] asks [[hottestFirst]]); a store takes others'
 * chunks while at most half of it is in use ([[roomForPeers]]), below the mark at which it would
 * hand off its own. A chunk exposed to one-sided reads never leaves memory: no read finds its
 * region gone.
 *
 * Lock: its own monitor, held while it chooses chunks across shuffles (to release, to move to
 * disk or to hand off), so that two choices never take the same chunk; under it, each shuffle's
 * monitor in turn.
 */
private[owner] final class MemoryPolicy private[owner] (
    val memory: MemoryBound,
    chunkSize: Long,
    disk: MergeStore.Disk,
    shuffles: StoreShuffles)
    extends Logging {

  private[this] val movedToDisk = new AtomicLong
  private[this] val releasedAfterRead = new AtomicLong

  /** Bytes of chunks moved from memory to disk so far. */
  def bytesMovedToDisk: Long = movedToDisk.get

  /** Bytes of chunks freed because a stage that read them completed ([[readBy]]). */
  def bytesReleasedAfterRead: Long = releasedAfterRead.get

  /** Above this many bytes in use, chunks are handed off to peers. */
  def handOffMark: Long = memory.capacity / 4 * 3

  /** Bytes of other owners' chunks this executor takes now. */
  def roomForPeers: Long = math.max(0L, memory.capacity / 2 - memory.used)

  /**
   * Reserves `bytes` of memory for a run of `shuffleId`, releasing chunks already read of older
   * shuffles, then moving chunks to disk, if that makes them fit.
   */
  def reserve(bytes: Long, shuffleId: Int): Boolean =
    memory.reserve(bytes) || bytes <= memory.capacity && {
      releaseRead(math.max(bytes, chunkSize) - (memory.capacity - memory.used), shuffleId)
      memory.reserve(bytes) || {
        makeRoom(bytes)
        memory.reserve(bytes)
      }
    }

  /** After a merge into `shuffleId`: past the hand-off mark, chunks already read go first. */
  def merged(shuffleId: Int): Unit =
    if (memory.used > handOffMark) releaseRead(memory.used - memory.capacity / 2, shuffleId)

  /**
   * A stage that read `shuffleId` completed: the chunks in memory of its sealed partitions go
   * now, and those other owners handed off here, rather than when memory runs short or Spark's
   * cleaner unregisters the shuffle (after the driver's GC). A hand-off's partition that no task
   * has read yet is then read from its files, as a partition whose chunk was lost is. Answers
   * the bytes freed.
   */
  def readBy(shuffleId: Int): Long = synchronized {
    val freed = shuffles
      .get(shuffleId)
      .fold(0L)(s => s.synchronized(s.releaseSealed(Long.MaxValue) + s.releaseHosted()))
    memory.release(freed)
    releasedAfterRead.addAndGet(freed)
    freed
  }

  /**
   * Releases up to `wanted` bytes of chunks whose partitions were read, of shuffles older than
   * `shuffleId` (the one merging), oldest first: before a chunk moves to disk or to a peer, and
   * as soon as the store is past the hand-off mark. A long-lived application's shuffles are read
   * once, mostly; its store would otherwise stay full of them until Spark's cleaner unregisters
   * them, and every newer shuffle would pay hand-offs and spills. The merging shuffle's own
   * sealed chunks stay: its reduce tasks are reading them. Should a released partition be read
   * again, its blocks are read from their files, as those pushed after its layout sealed it are
   * (a reader holding the older layout finds the chunk gone and reads the files).
   */
  private def releaseRead(wanted: Long, shuffleId: Int): Unit = if (wanted > 0) synchronized {
    var freed = 0L
    val oldestFirst = shuffles.all.filter(_._1 < shuffleId).sortBy(_._1).iterator
    while (freed < wanted && oldestFirst.hasNext) {
      val s = oldestFirst.next()._2
      freed += s.synchronized(s.releaseSealed(wanted - freed))
    }
    memory.release(freed)
  }

  /**
   * Moves chunks to disk until `bytes` (at least a chunk's worth, so that a stream of runs does
   * not move one chunk each) are free: the chunks of the partitions with the most merged bytes
   * first, the largest of each first. Stops at the first write that fails.
   */
  private def makeRoom(bytes: Long): Unit = synchronized {
    val wanted = math.max(bytes, chunkSize) - (memory.capacity - memory.used)
    if (wanted <= 0) return
    val inOrder = hottestFirst((_, chunk) => chunk.region.isEmpty).iterator
    var freed = 0L
    var moved = 0L
    try {
      while (freed < wanted && inOrder.hasNext) {
        val (id, s, chunk) = inOrder.next()
        val memoryFreed = s.synchronized(s.moveToDisk(chunk, disk.file(id)))
        if (memoryFreed > 0) moved += chunk.bytes
        freed += memoryFreed
      }
    } catch {
      case NonFatal(e) =>
        logWarning(
          "Could not move merged chunks to disk; runs that do not fit stay in their files",
          e)
    } finally {
      memory.release(freed)
      movedToDisk.addAndGet(moved)
    }
  }

  /** Runs `choice` of chunks across shuffles with no other choice under way. */
  def choosing[T](choice: => T): T = synchronized(choice)

  /**
   * The chunks in memory that are not on their way to a peer and that `movable` allows, with
   * their shuffle: those of the partitions with the most merged bytes first, the largest of each
   * first (a skewed shuffle's hot partitions are the ones that overflow).
   */
  def hottestFirst(
      movable: (ShuffleMerges, HeldChunk) => Boolean): Seq[(Int, ShuffleMerges, HeldChunk)] =
    shuffles.all
      .flatMap { case (id, s) =>
        s.synchronized(s.inMemory.collect {
          case (chunk, partitionBytes) if !chunk.leaving && movable(s, chunk) =>
            (id, s, chunk, partitionBytes)
        })
      }
      .sortBy { case (_, _, chunk, partitionBytes) => (-partitionBytes, -chunk.bytes) }
      .map { case (id, s, chunk, _) => (id, s, chunk) }
}
