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
    TableUpload(2, Int.MaxValue),
    PushedRun(2, 5, 4, 9),
    PushedRun(2, 1L << 40, 0, 1))

  /** The message an id spells, read the way its message travels. */
  private def read(m: BlockMessage, id: BlockId): Option[BlockMessage] = m match {
    case _: Request => Request.unapply(id)
    case _: Upload => Upload.unapply(id)
  }

  test("every message reads back as itself from its block id, the way it travels") {
    messages.foreach(m => assert(read(m, m.blockId) === Some(m), m))
    assert(messages.map(_.blockId).distinct.size === messages.size)
  }

  test("a map output's blocks fetched are no request; a run of them pushed is its upload") {
    val fetched = Seq[BlockId](
      ShuffleBlockBatchId(2, 0, 4, 9),
      ShuffleBlockBatchId(2, 5, 7, 8),
      ShuffleBlockBatchId(2, 1L << 40, 0, 1),
      ShuffleBlockId(2, 5, 7))
    fetched.foreach(id => assert(Request.unapply(id).isEmpty, id))
    assert(!fetched.exists(BlockMessage.isRequest))
    assert(Upload.unapply(ShuffleBlockBatchId(2, 5, 7, 8)) === Some(PushedRun(2, 5, 7, 8)))
    // Block migration's uploads are the map output files themselves.
    assert(Upload.unapply(ShuffleBlockId(2, 5, 7)).isEmpty)
  }

  test("requests are fetched and uploads streamed: Spark parses every message's id by its name") {
    assert(messages.filter(m => BlockMessage.isRequest(m.blockId)) === messages.collect {
      case r: Request => r
    })
    // Spark's upload path, and its block server under the old fetch protocol, parse the id's
    // name, and only non-negative map ids.
    messages.foreach(m => assert(read(m, BlockId(m.blockId.name)) === Some(m), m))
  }

  test("a log line names the message, not its spelling") {
    assert(BlockMessage.describe(LayoutRequest(3, 0, 10).blockId) === "LayoutRequest(3,0,10)")
    assert(BlockMessage.describe(ShuffleBlockBatchId(3, 1, 0, 10)) === "shuffle_3_1_0_10")
  }
}
