package org.apache.spark.shuffle.adaptive.read

import java.io.{FilterInputStream, InputStream, IOException}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{TaskContext, TaskContextImpl}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

import org.apache.spark.shuffle.adaptive.fetch.{BlockRef, FetcherFakes}
import org.apache.spark.shuffle.adaptive.fetch.FetcherFakes._
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.FetchOrder
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.push.protocol.ChunkRequest
import org.apache.spark.shuffle.adaptive.push.reduce.MergedChunkRead
import org.apache.spark.shuffle.adaptive.read.BundledPart

/**
 * A reduce task reading a chunk that holds blocks of several map outputs (a merged partition,
 * mode=push): one request for the chunk, each of its blocks served as a block of its own, and
 * the blocks read from their map outputs when the chunk cannot be fetched or one of its blocks is
 * corrupt.
 */
class ChunkReadSuite extends AnyFunSuite {

  private val self = BlockManagerId("local-exec", "local-host", 1000)
  private val owner = BlockManagerId("exec-1", "host-1", 1001)
  private val home = BlockManagerId("exec-2", "host-2", 1002)

  private val fromHome = ShuffleBlockId(0, 1, 5)
  private val fromSelf = ShuffleBlockId(0, 2, 5)
  private val homeBytes = Array.tabulate[Byte](300)(i => (i * 7).toByte)
  private val selfBytes = Array.tabulate[Byte](200)(i => (i * 3 + 1).toByte)
  private val chunk = ChunkRequest(0, 5, 2).blockId
  private val chunkBytes = homeBytes ++ selfBytes
  private val parts = IndexedSeq(
    BundledPart(BlockRef(fromHome, homeBytes.length, 1), home, 0, homeBytes.length),
    BundledPart(BlockRef(fromSelf, selfBytes.length, 2), self, homeBytes.length, selfBytes.length))

  private class Reading(
      serve: Call => Unit,
      wrapper: (BlockId, InputStream) => InputStream = (_, in) => in,
      concatenate: Boolean = false,
      holder: BlockManagerId = owner) {
    val context: TaskContextImpl = TaskContext.empty()
    val counters = new FetchCounters
    val metrics = new TempShuffleReadMetrics
    // A chunk held here is not in the store any more (released after an earlier read).
    val local = new FakeLocal(self, Map(fromSelf -> Blk(fromSelf, selfBytes, 2)), Set(chunk))
    val transport = new FakeTransport
    transport.onFetch = serve
    val settings = FlowSettings(
      1L << 20,
      Int.MaxValue,
      Int.MaxValue,
      1L << 18,
      Long.MaxValue,
      true,
      true,
      false,
      "ADLER32",
      order = FetchOrder.Naive,
      elastic = false)
    val fetcher = FetcherFakes.newFetcher(
      context,
      transport,
      local,
      Iterator.empty,
      wrapper,
      settings,
      settings.elasticLimit(),
      metrics,
      counters,
      bundles =
        Seq(holder -> new MergedChunkRead(chunk, parts, chunkBytes.length.toLong, counters)),
      concatenate = concatenate)

    def readAll(): Map[BlockId, Seq[Byte]] = {
      val out = mutable.Map.empty[BlockId, Seq[Byte]]
      while (fetcher.hasNext) {
        val (id, in) = fetcher.next()
        try {
          assert(!out.contains(id), s"$id served twice")
          out(id) = readFully(in).toSeq
        } finally in.close()
      }
      out.toMap
    }

    def assertNoLeak(): Unit = (transport.buffers ++ local.buffers).foreach { buf =>
      assert(!buf.overReleased && buf.refs == 0, buf)
    }
  }

  private val expected =
    Map[BlockId, Seq[Byte]](fromHome -> homeBytes.toSeq, fromSelf -> selfBytes.toSeq)

  test("a chunk is fetched in one request and each of its blocks is served") {
    val r = new Reading(call => {
      assert(call.address === owner && call.blockIds === Seq(chunk.name))
      call.succeed(chunk.name, chunkBytes)
    })
    assert(r.readAll() === expected)
    assert(r.transport.calls.size === 1 && r.local.reads.isEmpty)
    assert(
      r.counters(FetchCounters.ChunksRead) === 1 && r.counters(
        FetchCounters.BlocksFromStores) === 2)
    assert(
      r.counters(FetchCounters.BytesFromStoresBySource) === Map(
        owner.executorId -> chunkBytes.length))
    // Both were pushed to the owner by their map output's executor, and now cross again.
    assert(r.counters(FetchCounters.BytesCrossedTwice) === chunkBytes.length)
    assert(r.metrics.remoteBlocksFetched === 2 && r.metrics.remoteBytesRead === chunkBytes.length)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }

  test("a chunk that cannot be fetched: its blocks are read from their map outputs") {
    val r = new Reading(call =>
      if (call.address == owner) call.fail(chunk.name, new IOException("owner lost"))
      else call.succeed(call.blockIds.head, homeBytes))
    assert(r.readAll() === expected)
    assert(
      r.transport.calls.map(c => (c.address, c.blockIds)) ===
        Seq(owner -> Seq(chunk.name), home -> Seq(fromHome.name)))
    assert(r.local.reads === Seq(fromSelf))
    assert(
      r.counters(FetchCounters.ChunkFallbacks) === 1 && r.counters(
        FetchCounters.BlocksFromStores) === 0)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }

  test("a chunk this executor holds that is gone from its store: its blocks come from files") {
    val r = new Reading(call => call.succeed(call.blockIds.head, homeBytes), holder = self)
    assert(r.readAll() === expected)
    assert(r.local.reads === Seq(chunk, fromSelf))
    assert(r.transport.calls.map(c => (c.address, c.blockIds)) === Seq(home -> Seq(fromHome.name)))
    assert(r.counters(FetchCounters.ChunkFallbacks) === 1)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }

  test("a chunk of another size than its layout said: its blocks come from their map outputs") {
    // Cut by the layout's offsets, a longer or shorter answer would yield wrong blocks.
    Seq(chunkBytes :+ 1.toByte, chunkBytes.dropRight(1)).foreach { answer =>
      val r = new Reading(call =>
        if (call.address == owner) call.succeed(chunk.name, answer)
        else call.succeed(call.blockIds.head, homeBytes))
      assert(r.readAll() === expected)
      assert(
        r.counters(FetchCounters.ChunkFallbacks) === 1 && r.counters(
          FetchCounters.ChunksRead) === 0)
      r.context.markTaskCompleted(None)
      r.assertNoLeak()
    }
  }

  test("a block of a chunk found corrupt is read again from its map output") {
    val opens = new AtomicInteger
    val corrupting = (id: BlockId, in: InputStream) =>
      if (id == fromHome && opens.incrementAndGet() == 1) new FailingStream(in, 3)
      else new FilterInputStream(in) {}
    val r = new Reading(
      call =>
        if (call.address == owner) call.succeed(chunk.name, chunkBytes)
        else call.succeed(call.blockIds.head, homeBytes),
      corrupting)
    assert(r.readAll() === expected)
    assert(r.transport.calls.last.address === home)
    assert(r.transport.calls.last.blockIds === Seq(fromHome.name))
    assert(r.counters(FetchCounters.CorruptRefetches) === 1)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }

  test("a chunk whose blocks may be read back to back is one stream") {
    val r = new Reading(call => call.succeed(chunk.name, chunkBytes), concatenate = true)
    assert(r.readAll() === Map[BlockId, Seq[Byte]](chunk -> chunkBytes.toSeq))
    assert(
      r.counters(FetchCounters.ChunksRead) === 1 && r.counters(
        FetchCounters.BlocksFromStores) === 2)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }

  test("a chunk read as one stream found corrupt: its blocks are read from their map outputs") {
    val corrupting = (id: BlockId, in: InputStream) =>
      if (id == fromHome && !in.isInstanceOf[java.io.ByteArrayInputStream]) {
        new FailingStream(in, 3)
      } else new FilterInputStream(in) {}
    val r = new Reading(
      call =>
        if (call.address == owner) call.succeed(chunk.name, chunkBytes)
        else call.succeed(call.blockIds.head, homeBytes),
      corrupting,
      concatenate = true)
    assert(r.readAll() === expected)
    assert(r.local.reads === Seq(fromSelf))
    assert(
      r.counters(FetchCounters.CorruptRefetches) === 1 && r.counters(
        FetchCounters.BlocksFromStores) === 0)
    r.context.markTaskCompleted(None)
    r.assertNoLeak()
  }
}
