package org.apache.spark.shuffle.adaptive.metrics

import java.nio.ByteBuffer

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.util.NettyUtils

/** Each figure of a memory sample moves by what a known allocation holds: none reads zero. */
class MemorySampleSuite extends AnyFunSuite {

  private val MiB = 1L << 20

  test("bytes held in the pool fetched blocks arrive in are buffered bytes, until released") {
    val pool = NettyUtils.getSharedPooledByteBufAllocator(true, false)
    val before = MemorySample.now()
    // A block larger than the pool's chunks, and ten small ones that take part of a chunk (a
    // figure of whole chunks would count 4 MiB for them). Other tests' transports may still
    // free buffers of this pool meanwhile: a figure within 1 MiB is exact enough.
    val held = pool.directBuffer(48 << 20) +: Seq.fill(10)(pool.directBuffer(64 << 10))
    try {
      val during = MemorySample.now()
      val added = during.buffered - before.buffered
      assert(math.abs(added - (48 * MiB + 10 * (64 << 10))) < MiB, (before, during))
      assert(during.nettyPooled >= during.buffered)
    } finally held.foreach(_.release())
    assert(math.abs(MemorySample.now().buffered - before.buffered) < MiB)
  }

  /** The heap live after a collection, while 128 MiB of arrays are kept. */
  private def liveHeapKeeping128MiB(): Long = {
    val kept = Array.fill(128)(new Array[Byte](1 << 20))
    System.gc()
    val live = MemorySample.now().liveHeap
    assert(kept.forall(_.length == 1 << 20))
    live
  }

  test("the heap live after a collection counts what survived it, not what it freed") {
    System.gc()
    val before = MemorySample.now().liveHeap
    val during = liveHeapKeeping128MiB()
    assert(during - before >= 120 * MiB, s"$before -> $during")
    System.gc()
    val after = MemorySample.now().liveHeap
    assert(during - after >= 120 * MiB, s"$during -> $after")
  }

  test("direct buffers count as direct memory; the process's resident set is read") {
    val before = MemorySample.now()
    val buffer = ByteBuffer.allocateDirect(32 << 20)
    val during = MemorySample.now()
    // Threads left by earlier suites in this JVM (Netty's, the cleaner's) may free a few direct
    // buffers between the two samples: a CI run saw 48 KiB less than the buffer.
    assert(during.direct - before.direct >= 31 * MiB, (before, during))
    assert(buffer.capacity == 32 << 20)
    assert(during.rss > during.liveHeap / 2 && during.rss > 64 * MiB, during)
  }

  test("the merge store's held bytes are what its metrics source says, 0 without one") {
    val source = new PluginMetricsSource
    assert(MemorySample.storeBytes(Seq(source)) === 0L, "nothing merged yet: no gauge")
    source.update("store.", Map("used" -> (48L << 20), "capacity" -> (64L << 20)))
    assert(MemorySample.storeBytes(Seq(source)) === (48L << 20))
    assert(MemorySample.storeBytes(Nil) === 0L)
  }

  test("the merge store's figures are its metrics source's store gauges, by their own names") {
    val source = new PluginMetricsSource
    source.update("fetch.", Map("requests" -> 3L))
    source.update("store.", Map("used" -> 5L, "push_late" -> 17L, "released_after_read" -> 9L))
    assert(
      MemorySample.storeFigures(Seq(source)) ===
        Map("used" -> 5L, "push_late" -> 17L, "released_after_read" -> 9L))
  }
}
