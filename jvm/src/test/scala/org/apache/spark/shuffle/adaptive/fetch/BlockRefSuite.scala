package org.apache.spark.shuffle.adaptive.fetch

import java.io.IOException

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.FetchFailed

import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.FetcherFakes.CountingBuffer
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

class BlockRefSuite extends AnyFunSuite {

  private val source = BlockManagerId("1", "host-1", 7000)
  private val ref = BlockRef(ShuffleBlockId(2, 7, 3), 5, 4)

  test(
    "an arrived block is ready as itself, counted as one block of its bytes, read again from its source") {
    val buf = new CountingBuffer("b", Array.fill[Byte](5)(1), 1)
    val arrival = ref.arrived(source, buf, "netty")
    assert(arrival.blocks === 1 && arrival.bytes === 5 && arrival.instead.isEmpty)
    val Seq(ready) = arrival.ready
    assert(ready.id === ref.blockId && ready.block === ref && ready.home === source)
    assert((ready.buf eq buf) && ready.readAgain === Seq(source -> ref) && !ready.onlyCopy)
  }

  test("a block of this executor's own files is not read again: it would give the same bytes") {
    val buf = new CountingBuffer("b", Array.fill[Byte](5)(1), 1)
    val Seq(ready) = ref.arrived(source, buf, FetchCounters.Local).ready
    // Not the only copy: a corrupt one fails with the checksum diagnosis.
    assert(ready.readAgain.isEmpty && !ready.onlyCopy)
  }

  test("a block that cannot be fetched fails the fetch for its map output and first partition") {
    val cause = new IOException("x")
    val batch = BlockRef(ShuffleBlockBatchId(2, 7, 3, 6), 5, 4)
    Seq(ref, batch).foreach { block =>
      val e = intercept[FetchFailedException](block.failed(source, "gone", cause))
      val reason = e.toTaskFailedReason.asInstanceOf[FetchFailed]
      assert(reason.bmAddress === source && reason.shuffleId === 2 && reason.mapId === 7L)
      assert(reason.mapIndex === 4 && reason.reduceId === 3)
      assert(e.getMessage.contains("gone") && (e.getCause eq cause))
    }
  }
}
