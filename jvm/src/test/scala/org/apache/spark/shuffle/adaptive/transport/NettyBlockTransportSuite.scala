package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.SparkFunSuite
import org.apache.spark.storage.{ShuffleBlockBatchId, ShuffleBlockId}

class NettyBlockTransportSuite extends SparkFunSuite {

  test("a map's second range goes in a second request; single blocks stay in one") {
    val a1 = ShuffleBlockBatchId(0, 7L, 0, 2)
    val b1 = ShuffleBlockBatchId(0, 8L, 0, 5)
    val a2 = ShuffleBlockBatchId(0, 7L, 3, 5)
    val a3 = ShuffleBlockBatchId(0, 7L, 8, 9)
    val otherShuffle = ShuffleBlockBatchId(1, 7L, 3, 5)
    assert(
      NettyBlockTransport.requests(Seq(a1, b1, a2, a3, otherShuffle)) ===
        Seq(Seq(a1, b1, otherShuffle), Seq(a2), Seq(a3)))
    val singles = Seq(ShuffleBlockId(0, 7L, 0), ShuffleBlockId(0, 7L, 3))
    assert(NettyBlockTransport.requests(singles) === Seq(singles))
  }
}
