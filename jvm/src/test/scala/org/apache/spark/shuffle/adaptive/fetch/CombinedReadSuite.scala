package org.apache.spark.shuffle.adaptive.fetch

import java.io.{FilterInputStream, InputStream, IOException}
import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicInteger
import java.util.zip.CRC32C

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{TaskContext, TaskContextImpl}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

import FetcherFakes._
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.FetchOrder
import org.apache.spark.shuffle.adaptive.combine.CombinedRead
import org.apache.spark.shuffle.adaptive.flow.{BlockRef, FlowSettings}
import org.apache.spark.shuffle.adaptive.metrics.{CombineCounters, FetchCounters}
import org.apache.spark.shuffle.adaptive.protocol.{BlockMessage, CombinedSegment, Payloads}

/**
 * A reduce task reading what another executor combined of its partition: one request in place
 * of that executor's blocks, a segment read only where every map output it holds is one the
 * task needs and its checksum matches, the other blocks read from their files.
 */
class CombinedReadSuite extends AnyFunSuite {

  private val self = BlockManagerId("local-exec", "local-host", 1000)
  private val home = BlockManagerId("exec-1", "host-1", 1001)

  private val first = ShuffleBlockId(0, 11, 5)
  private val second = ShuffleBlockId(0, 12, 5)
  private val firstBytes = Array.tabulate[Byte](300)(i => (i * 7).toByte)
  private val secondBytes = Array.tabulate[Byte](200)(i => (i * 3 + 1).toByte)
  private val combined = Array.tabulate[Byte](120)(i => (i * 5 + 2).toByte)
  private val needed =
    Seq(BlockRef(first, firstBytes.length, 0), BlockRef(second, secondBytes.length, 1))
  private val files = Map[String, Array[Byte]](first.name -> firstBytes, second.name -> secondBytes)

  private def crc(bytes: Array[Byte]): Long = {
    val c = new CRC32C
    c.update(bytes)
    c.getValue
  }

  /** What the executor answers: segments of `maps` (each `combined`), checksummed as `sum`. */
  private def answer(segments: Seq[Seq[Long]], sum: Array[Byte] => Long = crc): Array[Byte] = {
    val header = Payloads.encodeHeader(
      segments.map(maps => CombinedSegment(5, 7, combined.length, sum(combined), maps.toArray)))
    val bytes = new Array[Byte](header.remaining)
    header.get(bytes)
    bytes ++ segments.flatMap(_ => combined)
  }

  private class Reading(
      respond: Call => Unit,
      wrapper: (BlockId, InputStream) => InputStream = (_, in) => in,
      concatenate: Boolean = false,
      batch: Boolean = false) {
    val context: TaskContextImpl = TaskContext.empty()
    val counters = new FetchCounters
    val metrics = new TempShuffleReadMetrics
    val local = new FakeLocal(self, Map.empty, Set.empty)
    val transport = new FakeTransport
    transport.onFetch = respond
    val read = new CombinedRead(0, 5, 6, home, needed, counters.combine)
    val settings =
      FlowSettings(
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
      Iterator(home -> Seq((read.id, read.ref.size, -1))),
      wrapper,
      settings,
      settings.elasticLimit(),
      metrics,
      counters,
      batch = batch,
      bundles = Map((home, read.id) -> read),
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

    def count(counter: CombineCounters.Counter): Long = counters.combine(counter)

    def finish(): Unit = {
      context.markTaskCompleted(None)
      (transport.buffers ++ local.buffers).foreach(b => assert(!b.overReleased && b.refs == 0, b))
    }
  }

  private val combinedName = BlockMessage.CombinedReadRequest(0, 5, 6).blockId.name

  /** Serves the combined read with `combinedAnswer`, and blocks from their files. */
  private def serving(combinedAnswer: Array[Byte]): Call => Unit = call =>
    call.blockIds.foreach { id =>
      if (id == combinedName) call.succeed(id, combinedAnswer)
      else call.succeed(id, files(id))
    }

  private val fromFiles =
    Map[BlockId, Seq[Byte]](first -> firstBytes.toSeq, second -> secondBytes.toSeq)

  test("a segment of every map output the task needs is read in place of their blocks") {
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L)))))
    // Served as its first map output's block, which a failure while it is read names.
    assert(r.readAll() === Map[BlockId, Seq[Byte]](first -> combined.toSeq))
    assert(r.transport.calls.map(_.blockIds) === Seq(Seq(r.read.id.name)))
    assert(r.count(CombineCounters.SegmentsRead) === 1 && r.count(CombineCounters.RowsOut) === 7)
    assert(r.count(CombineCounters.BlocksReplaced) === 2)
    assert(r.count(CombineCounters.BytesReplaced) === firstBytes.length + secondBytes.length)
    assert(r.count(CombineCounters.BlocksFromFiles) === 0)
    r.finish()
  }

  test("what no segment holds is read from the files") {
    val r = new Reading(serving(answer(Seq(Seq(11L)))))
    assert(
      r.readAll() === Map[BlockId, Seq[Byte]](first -> combined.toSeq, second -> secondBytes.toSeq))
    assert(r.transport.calls.last.blockIds === Seq(second.name))
    assert(
      r.count(CombineCounters.BlocksReplaced) === 1 && r.count(
        CombineCounters.BlocksFromFiles) === 1)
    r.finish()
  }

  test("a segment that also holds a map output the task does not read is not read") {
    // Map 13: an attempt Spark did not keep, or a map outside the task's range.
    val r = new Reading(serving(answer(Seq(Seq(11L, 13L), Seq(12L)))))
    assert(
      r.readAll() === Map[BlockId, Seq[Byte]](first -> firstBytes.toSeq, second -> combined.toSeq))
    assert(
      r.count(CombineCounters.SegmentsRead) === 1 && r.count(CombineCounters.BlocksFromFiles) === 1)
    r.finish()
  }

  test("a map output in two segments is read from the first only") {
    val r = new Reading(serving(answer(Seq(Seq(11L), Seq(11L, 12L)))))
    assert(
      r.readAll() === Map[BlockId, Seq[Byte]](first -> combined.toSeq, second -> secondBytes.toSeq))
    r.finish()
  }

  test("a segment naming a map output twice (two attempts of one map task) is never read") {
    val r = new Reading(serving(answer(Seq(Seq(11L, 11L, 12L)))))
    assert(r.readAll() === fromFiles)
    assert(
      r.count(CombineCounters.SegmentsRead) === 0 && r.count(CombineCounters.BlocksFromFiles) === 2)
    r.finish()
  }

  test("a segment whose checksum does not match is read from the files of its map outputs") {
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L)), sum = bytes => crc(bytes) + 1)))
    assert(r.readAll() === fromFiles)
    assert(
      r.count(CombineCounters.CorruptSegments) === 1 && r.count(
        CombineCounters.BlocksFromFiles) === 2)
    r.finish()
  }

  test("a combined read that cannot be fetched: the blocks are read from their files") {
    val r = new Reading(call =>
      call.blockIds.foreach { id =>
        if (id == combinedName) call.fail(id, new IOException("executor lost"))
        else call.succeed(id, files(id))
      })
    assert(r.readAll() === fromFiles)
    assert(
      r.count(CombineCounters.ReadFallbacks) === 1 && r.counters(
        FetchCounters.ChunkFallbacks) === 0)
    r.finish()
  }

  test("an answer of another length than its header says: the blocks are read from their files") {
    val whole = answer(Seq(Seq(11L, 12L)))
    Seq(whole :+ 1.toByte, whole.dropRight(1)).foreach { bytes =>
      val r = new Reading(serving(bytes))
      assert(r.readAll() === fromFiles)
      assert(r.count(CombineCounters.SegmentsRead) === 0)
      r.finish()
    }
  }

  test("a segment found corrupt when opened is read from the files of its map outputs") {
    val opens = new AtomicInteger
    val corrupting = (id: BlockId, in: InputStream) =>
      if (id == first && opens.incrementAndGet() == 1) new FailingStream(in, 3)
      else new FilterInputStream(in) {}
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L)))), corrupting)
    assert(r.readAll() === fromFiles)
    assert(r.counters(FetchCounters.CorruptRefetches) === 1)
    assert(r.transport.calls.last.blockIds === Seq(first.name, second.name))
    r.finish()
  }

  test("segments whose blocks may be read back to back are one stream") {
    val r = new Reading(serving(answer(Seq(Seq(11L), Seq(12L)))), concatenate = true)
    assert(r.readAll() === Map[BlockId, Seq[Byte]](r.read.id -> (combined ++ combined).toSeq))
    assert(
      r.count(CombineCounters.SegmentsRead) === 2 && r.counters(
        FetchCounters.BlocksFromStores) === 0)
    r.finish()
  }

  test("where the task fetches in batches, the blocks no segment holds come as one batch") {
    val r = new Reading(
      call =>
        call.blockIds.foreach { id =>
          if (id == combinedName) call.succeed(id, answer(Nil))
          else call.succeed(id, firstBytes ++ secondBytes)
        },
      batch = true)
    val read = r.readAll()
    // Nothing combined: the executor's blocks of map 11 and 12 are two batch blocks.
    assert(read.keySet.map(_.name) === Set("shuffle_0_11_5_6", "shuffle_0_12_5_6"))
    assert(r.count(CombineCounters.BlocksFromFiles) === 2)
    r.finish()
  }

  test("the header round-trips") {
    val segments = Seq(
      CombinedSegment(3, 10, 99, 12345L, Array(1L, 5L)),
      CombinedSegment(4, 0, 0, 0L, Array.empty))
    val encoded = Payloads.encodeHeader(segments)
    val padded = ByteBuffer.allocate(encoded.remaining + 3)
    padded.put(encoded).flip()
    val (decoded, length) = Payloads.decodeHeader(padded)
    assert(length === padded.remaining)
    assert(
      decoded.map(s => (s.partition, s.rows, s.length, s.checksum, s.mapIds.toSeq)) ===
        segments.map(s => (s.partition, s.rows, s.length, s.checksum, s.mapIds.toSeq)))
  }
}
