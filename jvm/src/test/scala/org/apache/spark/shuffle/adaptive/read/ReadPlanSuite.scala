package org.apache.spark.shuffle.adaptive.read

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.{BlockRef, FetchItem}
import org.apache.spark.shuffle.adaptive.push.protocol.ChunkRequest
import org.apache.spark.shuffle.adaptive.combine.protocol.CombinedReadRequest

class ReadPlanSuite extends AnyFunSuite {

  private val reader = BlockManagerId("r", "host-r", 7000)
  private val a = BlockManagerId("a", "host-a", 7000)
  private val b = BlockManagerId("b", "host-b", 7000)

  private def ref(map: Long, partition: Int, size: Long) =
    BlockRef(ShuffleBlockId(0, map, partition), size, map.toInt)

  /** A bundle read in place of blocks (`replaces`, as a merged chunk) or beside them. */
  private final class Bundle(val id: BlockId, val size: Long, replaces: Boolean)
      extends BundledRead {
    override def blocks: Int = 1
    override def replacesBlocks: Boolean = replaces
    override def instead(why: String, cause: Option[Throwable]): Seq[(BlockManagerId, BlockRef)] =
      Nil
    override def cut(bytes: ManagedBuffer): Either[String, BundledRead.Cut] = Left("unused")
    override def joinable: Boolean = true
    override def name(holder: BlockManagerId): String = "bundle"
    override def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit =
      ()
  }

  private def ids(requests: Seq[(BlockManagerId, IndexedSeq[FetchItem])]) =
    requests.map { case (source, items) => source.executorId -> items.map(_.blockId) }

  test("each source's bundles come first, then its blocks that hold records; new holders last") {
    val chunk = new Bundle(ChunkRequest(0, 5, 1).blockId, 300, replaces = true)
    val plan = ReadPlan(
      Seq(a -> Seq(ref(1, 5, 10), ref(2, 5, 0), ref(3, 5, 7))),
      bundles = Seq(b -> chunk, a -> new Bundle(ChunkRequest(0, 5, 2).blockId, 9, true)))
    val requests = plan.requests(reader, batch = false, concatenate = false)
    assert(
      ids(requests) === Seq(
        "a" -> Seq(ChunkRequest(0, 5, 2).blockId, ref(1, 5, 10).blockId, ref(3, 5, 7).blockId),
        "b" -> Seq(chunk.id)))
    assert(requests.flatMap(_._2).map(_.size) === Seq(9L, 10L, 7L, 300L))
  }

  test(
    "in batches, a map output's blocks span the gaps of empty blocks, not of blocks a bundle replaces") {
    val blocks = Seq(a -> Seq(ref(1, 4, 10), ref(1, 6, 5), ref(1, 7, 1)))
    val spanning = ReadPlan(blocks).requests(reader, batch = true, concatenate = false)
    assert(ids(spanning) === Seq("a" -> Seq(ShuffleBlockBatchId(0, 1, 4, 8))))
    val combined =
      new Bundle(CombinedReadRequest(0, 4, 8).blockId, 1, replaces = false)
    assert(
      ids(ReadPlan(blocks, bundles = Seq(b -> combined))
        .requests(reader, batch = true, concatenate = false)) ===
        Seq("a" -> Seq(ShuffleBlockBatchId(0, 1, 4, 8)), "b" -> Seq(combined.id)))
    val chunk = new Bundle(ChunkRequest(0, 5, 1).blockId, 8, replaces = true)
    assert(
      ids(ReadPlan(blocks, bundles = Seq(b -> chunk))
        .requests(reader, batch = true, concatenate = false)) ===
        Seq(
          "a" -> Seq(ShuffleBlockBatchId(0, 1, 4, 5), ShuffleBlockBatchId(0, 1, 6, 8)),
          "b" -> Seq(chunk.id)))
  }
}
