package org.apache.spark.shuffle.adaptive.push.protocol

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/**
 * One chunk of a reduce partition merged at its owner: the blocks of `mapIds` (map ids as in
 * their MapStatus) in that order, `lengths` bytes each, back to back. `hostedAt` is the peer
 * that holds it when the owner handed it off (remote-memory spill); otherwise the owner does.
 * `region` is where peers read it one-sided, if its holder exposed it (UCX).
 */
private[push] final case class MergedChunk(
    chunkId: Int,
    partition: Int,
    mapIds: Array[Long],
    lengths: Array[Long],
    hostedAt: Option[BlockManagerId] = None,
    region: Option[RemoteRegion] = None) {
  def bytes: Long = lengths.sum

  /** How a reader asks for this chunk: at its owner, or at the peer it was handed off to. */
  def request(shuffleId: Int): PushRequest =
    if (hostedAt.isDefined) HostedChunkRequest(shuffleId, partition, chunkId)
    else ChunkRequest(shuffleId, partition, chunkId)
}
