package org.apache.spark.shuffle.adaptive.combine.protocol

import org.apache.spark.SparkFunSuite
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

class CombineRequestSuite extends SparkFunSuite {

  test("a combined read reads back as itself from its block id and its name") {
    Seq(CombinedReadRequest(2, 4, 9), CombinedReadRequest(0, 0, Int.MaxValue)).foreach { r =>
      assert(CombineRequest.unapply(r.blockId) === Some(r))
      assert(CombineRequest.unapply(BlockId(r.blockId.name)) === Some(r))
      assert(BlockMessage.isMessage(r.blockId))
    }
  }

  test("neither a map output's blocks nor another feature's message is a combined read") {
    assert(CombineRequest.unapply(ShuffleBlockBatchId(2, 5, 4, 9)).isEmpty)
    assert(CombineRequest.unapply(BlockMessage.spell(2, 4000, 0, 4, 9)).isEmpty)
  }
}
