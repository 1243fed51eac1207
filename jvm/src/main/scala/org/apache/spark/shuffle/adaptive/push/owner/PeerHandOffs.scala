package org.apache.spark.shuffle.adaptive.push.owner

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.push.protocol.{HandOffUpload, RunStream}

/**
 * Remote-memory spill (DSA w/ SMS): chunks an owner hands to peers with free memory, and those it
 * holds for peers. Past the hand-off mark ([[MemoryPolicy.handOffMark]]), chunks of the
 * partitions with the most merged bytes leave for peers ([[take]], then [[handedOff]] or
 * [[kept]]; [[ChunkHandOff]] does it): the hot partitions of a skewed shuffle are the ones that
 * overflow, and each is still read as a few large chunks, from where its layout says they are.
 * A chunk handed here ([[receive]]) is held while it fits in [[MemoryPolicy.roomForPeers]].
 *
 * Locks: [[take]] chooses under the memory policy's monitor, as every choice of chunks does; a
 * chunk's leaving, arrival or return is recorded under its shuffle's monitor.
 */
private[owner] final class PeerHandOffs private[owner] (
    policy: MemoryPolicy,
    shuffles: StoreShuffles,
    changed: () => Unit) {

  private[this] val memory = policy.memory
  private[this] val movedToPeers = new AtomicLong
  private[this] val heldForPeers = new AtomicLong

  /** Bytes of chunks handed off to peers so far. */
  def bytesHandedOff: Long = movedToPeers.get

  /** Bytes of other owners' chunks taken so far. */
  def bytesHostedForPeers: Long = heldForPeers.get

  /**
   * Chunks in memory of partitions no layout has sealed, at most `bytes` in all, hottest
   * partitions first, to hand off; nothing more is appended to them, and they stay here until
   * [[handedOff]] or [[kept]].
   */
  def take(bytes: Long): Seq[LeavingChunk] = policy.choosing {
    var taken = 0L
    policy.hottestFirst((s, chunk) => !s.isSealed(chunk.partition)).flatMap { case (id, s, chunk) =>
      if (taken + chunk.bytes > bytes) None
      else
        s.synchronized(s.leave(chunk)).map { upload =>
          taken += chunk.bytes
          new LeavingChunk(id, s, chunk, upload)
        }
    }
  }

  /**
   * `chunk` arrived at `peer`: it is read there from now on and its memory here is freed, unless
   * a layout sealed its partition meanwhile (that layout says it is here, so it stays).
   */
  def handedOff(chunk: LeavingChunk, peer: BlockManagerId): Boolean = {
    val freed = chunk.shuffle.synchronized(chunk.shuffle.handedOff(chunk.chunk, peer))
    memory.release(freed)
    if (freed > 0) movedToPeers.addAndGet(chunk.bytes)
    changed()
    freed > 0
  }

  /** `chunk` could not be handed off: it stays here. */
  def kept(chunk: LeavingChunk): Unit = chunk.shuffle.synchronized(chunk.chunk.leaving = false)

  /**
   * Chunk `chunkId` of `partition`, handed off here by its owner; refused (the owner tries
   * elsewhere) when it does not fit in [[MemoryPolicy.roomForPeers]], and when a chunk of that
   * partition and id is here already: owners of two versions of the table may each have merged a
   * chunk of that id, and the one here is the one whose owner's layout names this executor.
   */
  def receive(shuffleId: Int, partition: Int, chunkId: Int): StreamCallbackWithID = {
    // Received as a run of the one partition the chunk is of.
    new RunStream(
      HandOffUpload(shuffleId, partition, chunkId),
      1,
      memory,
      bytes => bytes <= policy.roomForPeers && memory.reserve(bytes),
      (_, data) => {
        val kept = shuffles.merging(shuffleId).fold(0L) { shuffle =>
          shuffle.synchronized(if (shuffle.removed) 0L else shuffle.host(partition, chunkId, data))
        }
        // Kept nothing (held already, or its shuffle is gone): the owner is told and keeps it.
        if (kept > 0) {
          heldForPeers.addAndGet(kept)
          changed()
        }
        kept
      },
      whenFull = RunStream.Refuse)
  }
}
