package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.SparkFunSuite
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage._
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId, ShuffleBlockId}

class BlockMessageSuite extends SparkFunSuite {

  private val messages: Seq[BlockMessage] = Seq(
    LayoutRequest(2, 4, 9),
    RoomRequest,
    SummaryRequest(4, mapStageEnded = false),
    SummaryRequest(4, mapStageEnded = true),
    RangeRequest(2, 4, 9),
    ChunkRequest(2, 7, 0),
    ChunkRequest(2, 7, Int.MaxValue),
    HostedChunkRequest(2, 7, 0),
    HostedChunkRequest(2, 7, Int.MaxValue),
    CombinedReadRequest(2, 4, 9),
    HandOffUpload(2, 7, 5),
    HandOffUpload(2, 0, 0),
    TableUpload(2, 1),
    TableUpload(2, Int.MaxValue))

  test("every message reads back as itself from its block id") {
    messages.foreach(m => assert(BlockMessage.unapply(m.blockId) === Some(m), m))
    assert(messages.map(_.blockId).distinct.size === messages.size)
  }

  test("map outputs' own ids are no message") {
    val runs = Seq[BlockId](
      ShuffleBlockBatchId(2, 0, 4, 9),
      ShuffleBlockBatchId(2, 5, 7, 8),
      ShuffleBlockBatchId(2, 1L << 40, 0, 1),
      ShuffleBlockId(2, 5, 7))
    runs.foreach(id => assert(BlockMessage.unapply(id).isEmpty, id))
    assert(!runs.exists(BlockMessage.isRequest))
  }

  test("requests are fetched and uploads streamed: Spark parses every message's id by its name") {
    assert(messages.filter(m => BlockMessage.isRequest(m.blockId)) === messages.collect {
      case r: Request => r
    })
    // Spark's upload path, and its block server under the old fetch protocol, parse the id's
    // name, and only non-negative map ids.
    messages.foreach { m =>
      assert(BlockMessage.unapply(BlockId(m.blockId.name)) === Some(m), m)
    }
  }

  test("a log line names the message, not its spelling") {
    assert(BlockMessage.describe(LayoutRequest(3, 0, 10).blockId) === "LayoutRequest(3,0,10)")
    assert(BlockMessage.describe(ShuffleBlockBatchId(3, 1, 0, 10)) === "shuffle_3_1_0_10")
  }
}
