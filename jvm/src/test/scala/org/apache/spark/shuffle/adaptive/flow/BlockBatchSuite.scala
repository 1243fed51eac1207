package org.apache.spark.shuffle.adaptive.flow

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.BlockRef

class BlockBatchSuite extends AnyFunSuite {

  private val exec = BlockManagerId("exec-1", "host-1", 7337)

  private def block(mapId: Int, size: Long): BlockRef =
    BlockRef(ShuffleBlockId(3, mapId.toLong, 0), size, mapId)

  private def blocks(sizes: Long*): IndexedSeq[BlockRef] =
    sizes.zipWithIndex.map { case (size, i) => block(i, size) }.toIndexedSeq

  private def sizesOf(requests: Seq[BlockBatch[BlockRef]]): Seq[Seq[Long]] =
    requests.map(_.blocks.map(_.size))

  test("no blocks, no request") {
    assert(BlockBatch.plan(exec, Nil, requestSize = 100, maxBlocks = 10).isEmpty)
  }

  test("small blocks are aggregated up to requestSize, never beyond it") {
    val requests = BlockBatch.plan(exec, blocks(30, 30, 30, 30, 30, 10), 100, 10)
    // 30+30+30 = 90; a fourth block would make 120 > 100, so it opens the next request.
    assert(sizesOf(requests) === Seq(Seq(30L, 30L, 30L), Seq(30L, 30L, 10L)))
    assert(requests.map(_.size) === Seq(90L, 70L))
    assert(requests.forall(_.address == exec))
  }

  test("a request closes exactly at requestSize") {
    val requests = BlockBatch.plan(exec, blocks(50, 50, 50), 100, 10)
    assert(sizesOf(requests) === Seq(Seq(50L, 50L), Seq(50L)))
  }

  test("a block larger than requestSize is never split and travels alone") {
    val requests = BlockBatch.plan(exec, blocks(10, 500, 20, 1000), 100, 10)
    assert(sizesOf(requests) === Seq(Seq(10L), Seq(500L), Seq(20L), Seq(1000L)))
    val alone = BlockBatch.plan(exec, blocks(500, 1000, 5), 100, 10)
    assert(sizesOf(alone) === Seq(Seq(500L), Seq(1000L), Seq(5L)))
  }

  test("maxBlocks caps the number of blocks of a request") {
    val requests = BlockBatch.plan(exec, blocks(Seq.fill(7)(1L): _*), 1000, 3)
    assert(sizesOf(requests) === Seq(Seq(1L, 1L, 1L), Seq(1L, 1L, 1L), Seq(1L)))
  }

  test("invalid limits are rejected") {
    intercept[IllegalArgumentException](BlockBatch.plan(exec, blocks(1), 0, 3))
    intercept[IllegalArgumentException](BlockBatch.plan(exec, blocks(1), 10, 0))
  }

  test("random inputs: order kept, each block once, limits respected") {
    val random = new Random(20240611L)
    for (round <- 0 until 200) {
      val count = random.nextInt(60)
      val input = (0 until count).map { i =>
        // Mostly small blocks, some far larger than the request size.
        val size =
          if (random.nextInt(8) == 0) 1L + random.nextInt(5000) else 1L + random.nextInt(80)
        block(i, size)
      }
      val requestSize = 1L + random.nextInt(400)
      val maxBlocks = 1 + random.nextInt(8)
      val requests = BlockBatch.plan(exec, input, requestSize, maxBlocks)
      val clue = s"round $round: requestSize=$requestSize maxBlocks=$maxBlocks " +
        s"sizes=${input.map(_.size)} requests=${sizesOf(requests)}"

      // Concatenated in order, the requests are exactly the input: each block once, in order.
      assert(requests.flatMap(_.blocks) === input, clue)
      assert(requests.forall(_.blocks.nonEmpty), clue)
      assert(requests.forall(_.address == exec), clue)
      assert(requests.forall(r => r.size == r.blocks.map(_.size).sum), clue)
      assert(requests.forall(_.blocks.size <= maxBlocks), clue)
      requests.zipWithIndex.foreach { case (request, i) =>
        // A request stays within requestSize, unless it is one larger block.
        assert(request.size <= requestSize || request.blocks.size == 1, clue)
        // Every request but the last was closed by a limit: the next block would not fit.
        if (i < requests.size - 1) {
          assert(
            request.size + requests(i + 1).blocks.head.size > requestSize ||
              request.blocks.size == maxBlocks,
            clue)
        }
      }
    }
  }
}
