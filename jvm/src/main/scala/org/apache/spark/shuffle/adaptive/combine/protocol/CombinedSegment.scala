package org.apache.spark.shuffle.adaptive.combine.protocol

/**
 * One segment of combined records: the records of `partition` folded from the map outputs
 * `mapIds` into `rows` records, `length` bytes as the map side writes a block (serialized,
 * compressed, encrypted), whose CRC32C is `checksum`. The segment is the only copy of what those
 * map outputs folded into it: their files hold only what they did not fold.
 */
private[spark] final case class CombinedSegment(
    partition: Int,
    rows: Long,
    length: Long,
    checksum: Long,
    mapIds: Array[Long])

/**
 * An executor's answer to a combined read of a partition range: whether it still holds the
 * shuffle's combined records (`known`; a reduce task that expected some and finds none fails
 * its fetch), per partition the map outputs whose folded rows it lost (a fold that failed half
 * way), and the segments, whose bytes follow the answer's header in that order.
 */
private[spark] final case class CombinedAnswer(
    known: Boolean,
    lost: Seq[(Int, Array[Long])],
    segments: Seq[CombinedSegment])

private[spark] object CombinedAnswer {

  /** The answer of an executor that holds nothing of the shuffle. */
  val Unknown: CombinedAnswer = CombinedAnswer(known = false, Nil, Nil)
}
