package org.apache.spark.shuffle.adaptive.push

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

class MergedReadsSuite extends AnyFunSuite {

  private val a = BlockManagerId("a", "host-a", 7000)
  private val b = BlockManagerId("b", "host-b", 7000)
  private val owner = BlockManagerId("o", "host-o", 7000)

  /** The map output tracker's view: blocks of maps 1..4 of partition 5, 100 bytes each. */
  private def needed(maps: Long*): Seq[(BlockManagerId, Seq[(BlockId, Long, Int)])] =
    maps.groupBy(m => if (m % 2 == 0) a else b).toSeq.sortBy(_._1.executorId).map {
      case (home, ms) => home -> ms.map(m => (ShuffleBlockId(0, m, 5): BlockId, 100L, m.toInt))
    }

  private def chunk(id: Int, mapIds: Long*) =
    MergedChunk(id, 5, mapIds.toArray, Array.fill(mapIds.size)(100L))

  private def listed(plan: MergedReads): Map[String, Set[String]] =
    plan.blocks
      .map { case (addr, blocks) => addr.executorId -> blocks.map(_._1.name).toSet }
      .filter(_._2.nonEmpty)
      .toMap

  test("merged blocks are read as their chunk at its owner, the others from their homes") {
    val plan = MergedReads.plan(0, needed(1, 2, 3, 4), Seq(owner -> Seq(chunk(0, 3, 1, 2))))
    val id = MergedBlocks.chunk(0, chunk(0, 3, 1, 2))
    assert(listed(plan) === Map("a" -> Set("shuffle_0_4_5"), "o" -> Set(id.name)))
    val parts = plan.chunks(id)
    assert(
      parts.map(p => (p.block.blockId.name, p.home.executorId, p.offset, p.length)) === Seq(
        ("shuffle_0_3_5", "b", 0L, 100L),
        ("shuffle_0_1_5", "b", 100L, 100L),
        ("shuffle_0_2_5", "a", 200L, 100L)))
    assert(parts.map(_.block.mapIndex) === Seq(3, 1, 2))
    assert(plan.chunksAtPeers === 0)
  }

  test("blocks of attempts Spark did not keep or maps outside the range are skipped") {
    // Map 9 is a lost attempt, map 4 outside this task's map range: 2 of 4 blocks needed.
    val plan = MergedReads.plan(0, needed(1, 2), Seq(owner -> Seq(chunk(0, 9, 1, 4, 2))))
    val parts = plan.chunks.values.head
    assert(
      parts.map(p => (p.block.blockId.name, p.offset)) ===
        Seq(("shuffle_0_1_5", 100L), ("shuffle_0_2_5", 300L)))
    assert(listed(plan).keySet === Set("o"))
  }

  test("a chunk mostly of blocks the task does not need is not read; its blocks come from files") {
    val plan = MergedReads.plan(0, needed(1), Seq(owner -> Seq(chunk(0, 1, 7, 8))))
    assert(plan.chunks.isEmpty && listed(plan) === Map("b" -> Set("shuffle_0_1_5")))
  }

  test("a block held by two chunks is read from the first") {
    val plan =
      MergedReads.plan(0, needed(1, 3), Seq(owner -> Seq(chunk(0, 1, 3)), a -> Seq(chunk(1, 3))))
    assert(plan.chunks.keySet === Set(MergedBlocks.chunk(0, chunk(0, 1, 3)): BlockId))
    assert(listed(plan) === Map("o" -> Set(MergedBlocks.chunk(0, chunk(0, 1, 3)).name)))
  }

  test("a chunk its owner handed off is read at the peer that holds it") {
    val handedOff = chunk(0, 1, 2).copy(hostedAt = Some(a))
    val plan = MergedReads.plan(0, needed(1, 2, 3), Seq(owner -> Seq(handedOff)))
    val id = MergedBlocks.chunk(0, handedOff)
    assert(MergedBlocks.Hosted.unapply(id) === Some((0, 5, 0)))
    assert(listed(plan) === Map("a" -> Set(id.name), "b" -> Set("shuffle_0_3_5")))
    assert(plan.chunksAtPeers === 1)
  }
}
