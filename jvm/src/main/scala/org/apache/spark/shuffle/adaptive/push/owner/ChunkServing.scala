package org.apache.spark.shuffle.adaptive.push.owner

import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.shuffle.adaptive.push.protocol.{MergedChunk, MergedPartition}
import org.apache.spark.shuffle.adaptive.transport.RemoteMemory

/**
 * What an owner's merge store serves: the driver's summary of what it merged, and to reduce tasks
 * their partitions' layouts and chunks. A reduce task first asks for the layout of its
 * partitions ([[layout]]), which seals them: nothing is appended to a sealed partition, so every
 * chunk is read exactly as its layout describes it, and blocks pushed later stay in their files.
 * Both merge first the runs still waiting ([[MergeIntake.mergeWaiting]]).
 *
 * Where `remote` lets peers read this executor's memory one-sided (UCX), a layout exposes the
 * chunks in memory of the partitions it seals and names their regions: reduce tasks read them
 * with no request served here.
 *
 * Lock: each answer is read under its shuffle's monitor alone.
 */
private[owner] final class ChunkServing private[owner] (
    intake: MergeIntake,
    shuffles: StoreShuffles,
    remote: () => Option[RemoteMemory])
    extends Logging {

  private[this] val exposureFailed = new AtomicBoolean

  /**
   * What this executor merged of `shuffleId` so far, per partition (for the driver's summary at
   * the map stage's end); seals nothing.
   */
  def summary(shuffleId: Int): Seq[MergedPartition] = {
    intake.mergeWaiting()
    shuffles.get(shuffleId).fold(Seq.empty[MergedPartition])(s => s.synchronized(s.summary))
  }

  /** Which of partitions `[start, end)` of `shuffleId` a layout sealed here (none once it went). */
  def sealedOf(shuffleId: Int, start: Int, end: Int): java.util.BitSet = {
    val sealedHere = new java.util.BitSet
    shuffles.get(shuffleId).foreach { s =>
      s.synchronized((start until end).foreach(p => if (s.isSealed(p)) sealedHere.set(p)))
    }
    sealedHere
  }

  /**
   * The chunks of partitions `[start, end)`, which are sealed from now on; for a peer, those in
   * memory exposed to one-sided reads where `remote` allows them (this executor's own tasks read
   * its chunks in place).
   */
  def layout(shuffleId: Int, start: Int, end: Int, forPeer: Boolean): Seq[MergedChunk] = {
    intake.mergeWaiting()
    val exposing = if (forPeer) remote() else None
    shuffles.merging(shuffleId).fold(Seq.empty[MergedChunk]) { s =>
      s.synchronized(s.seal(start, end, chunk => exposing.foreach(expose(chunk, _))))
    }
  }

  private def expose(chunk: HeldChunk, to: RemoteMemory): Unit =
    try chunk.expose(to)
    catch {
      case NonFatal(e) =>
        // Such chunks are read through the block server: say so once, not per chunk.
        if (!exposureFailed.getAndSet(true)) {
          logWarning("Merged chunks could not be exposed to one-sided reads", e)
        }
    }

  /**
   * A chunk's bytes: a view of them in memory, or a segment of its shuffle's merged file; none
   * once it was handed off.
   */
  def chunk(shuffleId: Int, chunkId: Int): Option[ManagedBuffer] =
    shuffles.get(shuffleId).flatMap(s => s.synchronized(s.bytesOf(chunkId)))

  /**
   * The bytes of the chunks this executor holds of partitions `[start, end)`, back to back in
   * their layout's order (those handed off to peers left out); none unless a layout sealed
   * every one of them, so the chunks are those the layout listed.
   */
  def range(shuffleId: Int, start: Int, end: Int): Option[ManagedBuffer] =
    shuffles.get(shuffleId).flatMap(s => s.synchronized(s.range(start, end)))

  /**
   * The bytes of the chunks this executor holds of `partition` whose ids are in `[first, until)`,
   * back to back in their layout's order (those handed off to peers left out); none unless a
   * layout sealed the partition and every one of them is still here.
   */
  def chunkRun(shuffleId: Int, partition: Int, first: Int, until: Int): Option[ManagedBuffer] =
    shuffles.get(shuffleId).flatMap(s => s.synchronized(s.chunkRun(partition, first, until)))

  /** A view of the bytes of chunk `chunkId` of `partition`, which its owner handed off here. */
  def hostedChunk(shuffleId: Int, partition: Int, chunkId: Int): Option[ManagedBuffer] =
    shuffles.get(shuffleId).flatMap(s => s.synchronized(s.hostedBytes(partition, chunkId)))
}
