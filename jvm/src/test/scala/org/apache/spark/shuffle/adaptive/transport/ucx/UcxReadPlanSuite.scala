package org.apache.spark.shuffle.adaptive.transport.ucx

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.{RDDBlockId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.push.protocol.ChunkRequest
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/** How blocks map to byte ranges of a region and to one-sided reads; no UCX needed. */
class UcxReadPlanSuite extends AnyFunSuite {

  private val region =
    UcxRegion(address = 1L << 20, rkey = Array[Byte](1, 2), offsets = Array(0L, 10L, 10L, 25L, 40L))

  test("a block's range comes from the index; a batch block spans its partitions") {
    assert(region.rangeOf(ShuffleBlockId(3, 7, 0)) === Some((0L, 10L)))
    assert(region.rangeOf(ShuffleBlockId(3, 7, 2)) === Some((10L, 15L)))
    assert(region.rangeOf(ShuffleBlockBatchId(3, 7, 1, 4)) === Some((10L, 30L)))
    assert(region.rangeOf(ShuffleBlockId(3, 7, 4)) === None)
    assert(region.rangeOf(ShuffleBlockBatchId(3, 7, 2, 2)) === None)
    assert(region.rangeOf(RDDBlockId(1, 0)) === None)
    assert(region.length === 40L)
    assert(UcxRegion.mapOutputOf(ShuffleBlockBatchId(3, 7, 1, 4)) === Some((3, 7L)))
    assert(UcxRegion.mapOutputOf(RDDBlockId(1, 0)) === None)
  }

  test("an exposed block is one read of its whole region, its key kept under its own id") {
    val chunk = ChunkRequest(3, 5, 9).blockId
    assert(UcxRegion.mapOutputOf(chunk) === None, "a merged chunk is no map output")
    val read = UcxBlockTransport.wholeRead(chunk, RemoteRegion(1L << 30, Array[Byte](4), 700L)).get
    assert((read.shuffleId, read.mapId, read.offset, read.length) === ((3, chunk.mapId, 0L, 700L)))
    assert(read.region.address === (1L << 30) && read.blocks.map(_.id) === Seq(chunk))
    assert(
      UcxBlockTransport
        .wholeRead(ShuffleBlockId(3, chunk.mapId, 5), RemoteRegion(0L, Array(), 1))
        .isEmpty)
  }

  test("adjacent blocks of a map output are one read, gaps split reads") {
    val blocks = Seq(
      (ShuffleBlockId(3, 7, 3), 25L, 15L),
      (ShuffleBlockId(3, 7, 0), 0L, 10L),
      (ShuffleBlockId(3, 7, 2), 10L, 15L))
    val reads = UcxBlockTransport.merge(3, 7, region, blocks)
    assert(reads.map(r => (r.offset, r.length)) === Seq((0L, 40L)))
    assert(
      reads.head.blocks.map(_.id) ===
        Seq(ShuffleBlockId(3, 7, 0), ShuffleBlockId(3, 7, 2), ShuffleBlockId(3, 7, 3)))

    val gapped = UcxBlockTransport.merge(3, 7, region, blocks.filterNot(_._2 == 10L))
    assert(gapped.map(r => (r.offset, r.length)) === Seq((0L, 10L), (25L, 15L)))
  }

  test("a read never exceeds the largest buffer; a larger block is read alone") {
    val blocks = Seq(
      (ShuffleBlockId(3, 7, 0), 0L, 10L),
      (ShuffleBlockId(3, 7, 2), 10L, 15L),
      (ShuffleBlockId(3, 7, 3), 25L, 15L))
    val reads = UcxBlockTransport.merge(3, 7, region, blocks, maxLength = 25)
    assert(reads.map(r => (r.offset, r.length)) === Seq((0L, 25L), (25L, 15L)))
    val alone = UcxBlockTransport.merge(3, 7, region, blocks, maxLength = 12)
    assert(alone.map(_.length) === Seq(10L, 15L, 15L))
  }

  test("buffer sizes are powers of two from the minimum") {
    assert(UcxBufferPool.sizeClass(1, 65536) === 65536)
    assert(UcxBufferPool.sizeClass(65536, 65536) === 65536)
    assert(UcxBufferPool.sizeClass(65537, 65536) === 131072)
    assert(UcxBufferPool.sizeClass((1 << 30) + 1, 65536) === Int.MaxValue - 8)
  }
}
