package org.apache.spark.shuffle.adaptive.push.protocol

import org.apache.spark.SparkFunSuite
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId, ShuffleBlockId}

class PushMessageSuite extends SparkFunSuite {

  private val requests: Seq[PushRequest] = Seq(
    LayoutRequest(2, 4, 9),
    RoomRequest,
    SummaryRequest(4, mapStageEnded = false),
    SummaryRequest(4, mapStageEnded = true),
    SealedRequest(4, 3, 9),
    RangeRequest(2, 4, 9),
    ChunkRunRequest(2, 7, 3, 9),
    ChunkRunRequest(2, Int.MaxValue, 0, Int.MaxValue),
    ReleaseRequest(3),
    ChunkRequest(2, 7, 0),
    ChunkRequest(2, 7, Int.MaxValue),
    HostedChunkRequest(2, 7, 0),
    HostedChunkRequest(2, 7, Int.MaxValue))

  private val uploads: Seq[PushUpload] = Seq(
    HandOffUpload(2, 7, 5),
    HandOffUpload(2, 0, 0),
    TableUpload(2, 1),
    TableUpload(2, Int.MaxValue),
    PushedRun(2, 5, 4, 9),
    PushedRun(2, 1L << 40, 0, 1))

  test("every message reads back as itself from its block id and its name") {
    requests.foreach { m =>
      assert(PushRequest.unapply(m.blockId) === Some(m), m)
      assert(PushRequest.unapply(BlockId(m.blockId.name)) === Some(m), m)
    }
    uploads.foreach { m =>
      assert(PushUpload.unapply(m.blockId) === Some(m), m)
      assert(PushUpload.unapply(BlockId(m.blockId.name)) === Some(m), m)
    }
    val ids = (requests ++ uploads).map(_.blockId)
    assert(ids.distinct.size === ids.size)
  }

  test("requests and kinded uploads are messages; a run pushed is spelled as its blocks") {
    assert(requests.forall(m => BlockMessage.isMessage(m.blockId)))
    assert(uploads.filterNot(m => BlockMessage.isMessage(m.blockId)) === uploads.collect {
      case r: PushedRun => r
    })
  }

  test("a map output's blocks fetched are no request; only a run of them is an upload") {
    val fetched = Seq[BlockId](
      ShuffleBlockBatchId(2, 0, 4, 9),
      ShuffleBlockBatchId(2, 1L << 40, 0, 1),
      ShuffleBlockId(2, 5, 7))
    fetched.foreach(id => assert(PushRequest.unapply(id).isEmpty, id))
    assert(PushUpload.unapply(ShuffleBlockBatchId(2, 5, 7, 8)) === Some(PushedRun(2, 5, 7, 8)))
    assert(PushUpload.unapply(ShuffleBlockBatchId(2, 5, 7, 7)).isEmpty)
    // Block migration's uploads are the map output files themselves.
    assert(PushUpload.unapply(ShuffleBlockId(2, 5, 7)).isEmpty)
  }

  test("another feature's message is not mode=push's") {
    val other = BlockMessage.spell(2, 4000, 3, 0, 1)
    assert(PushRequest.unapply(other).isEmpty && PushUpload.unapply(other).isEmpty)
  }
}
