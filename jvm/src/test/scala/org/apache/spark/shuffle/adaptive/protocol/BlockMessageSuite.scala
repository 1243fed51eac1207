package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.SparkFunSuite
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage.{Spelled, Words}
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId, ShuffleBlockId}

class BlockMessageSuite extends SparkFunSuite {

  private val words = Seq(
    Words(0, 0, 0, 0, 0),
    Words(2, 1, 0, 4, 9),
    Words(2, 7, Int.MaxValue, 7, 8),
    Words(Int.MaxValue, BlockMessage.Kinds - 1, Int.MaxValue, 0, 1))

  private def spelled(w: Words): ShuffleBlockBatchId =
    BlockMessage.spell(w.shuffleId, w.kind, w.number, w.start, w.end)

  test("a message's id reads back as its kind, number and partitions, also from its name") {
    words.foreach { w =>
      assert(Spelled.unapply(spelled(w)) === Some(w), w)
      // Spark's upload path, and its block server under the old fetch protocol, parse the id's
      // name, and only non-negative map ids.
      assert(Spelled.unapply(BlockId(spelled(w).name)) === Some(w), w)
      assert(BlockMessage.isMessage(spelled(w)))
    }
    assert(words.map(spelled).distinct.size === words.size)
  }

  test("no map output's blocks are a message") {
    val mapOutputs = Seq[BlockId](
      ShuffleBlockBatchId(2, 0, 4, 9),
      ShuffleBlockBatchId(2, 5, 7, 8),
      ShuffleBlockBatchId(2, BlockMessage.FirstMessageId - 1, 0, 1),
      ShuffleBlockId(2, 5, 7))
    mapOutputs.foreach(id => assert(Spelled.unapply(id).isEmpty, id))
    assert(!mapOutputs.exists(BlockMessage.isMessage))
  }

  test("a kind or number out of the spelling's range is refused, not folded into another") {
    intercept[IllegalArgumentException](BlockMessage.spell(0, BlockMessage.Kinds, 0, 0, 1))
    intercept[IllegalArgumentException](BlockMessage.spell(0, -1, 0, 0, 1))
    intercept[IllegalArgumentException](BlockMessage.spell(0, 1, -1, 0, 1))
  }
}
