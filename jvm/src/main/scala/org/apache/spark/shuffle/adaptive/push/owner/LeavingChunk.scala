package org.apache.spark.shuffle.adaptive.push.owner

import org.apache.spark.network.buffer.ManagedBuffer

/** A chunk on its way to a peer (see [[PeerHandOffs.take]]). */
private[owner] final class LeavingChunk private[owner] (
    val shuffleId: Int,
    private[owner] val shuffle: ShuffleMerges,
    private[owner] val chunk: HeldChunk,
    val upload: ManagedBuffer) {
  def partition: Int = chunk.partition
  def chunkId: Int = chunk.id
  def bytes: Long = chunk.bytes
}
