package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.BlockRef

/**
 * A request a reduce task reads whole, whose bytes bundle blocks of map outputs: a merged
 * partition's chunk (mode=push) or the combined records of an executor (local reduction). Once it
 * arrives it is cut into parts, each served as a block of its own ([[BundleRequest]] does it for
 * the fetcher); each kind counts what became of it in its own counters.
 */
private[spark] trait BundledRead {

  /** What is asked of its holder. */
  def id: BlockId

  /** The bytes it is expected to take, for the fetch's flow control. */
  def size: Long

  /**
   * How many blocks Spark's read metrics count it as: the map-output blocks it stands for where
   * they are known before it arrives, else one.
   */
  def blocks: Int

  /**
   * Whether the blocks it holds are read in its place rather than from their map outputs' files
   * (a merged chunk's: the files hold them too), so that a batch of a map output's blocks may not
   * span them; combined records are the only copy of what they hold and stand for no block.
   */
  def replacesBlocks: Boolean

  /**
   * What to read in place of it when it could not be fetched or its bytes are not what was
   * asked for (`why`, and the error if there is one), asked once per read: the blocks it stands
   * for, from their files. One that is the only copy of what it holds throws a fetch failure,
   * so that Spark runs the map tasks that made it again.
   */
  def instead(why: String, cause: Option[Throwable]): Seq[(BlockManagerId, BlockRef)]

  /** The parts of `bytes` to serve, or why they are not what was asked for. */
  def cut(bytes: ManagedBuffer): Either[String, BundledRead.Cut]

  /** Whether its parts are blocks a serializer may read back to back as one stream. */
  def joinable: Boolean

  /** What a message calls it, held at `holder`. */
  def name(holder: BlockManagerId): String

  /** `part`, read out of the bundle held at `holder`, was served to a task on `reader`. */
  def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit
}

private[spark] object BundledRead {

  /** What an arrived bundle serves: its `parts`. */
  final case class Cut(parts: IndexedSeq[BundledPart])
}
