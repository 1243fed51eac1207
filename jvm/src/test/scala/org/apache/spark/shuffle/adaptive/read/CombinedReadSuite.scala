package org.apache.spark.shuffle.adaptive.read

import java.io.{FilterInputStream, InputStream, IOException}
import java.nio.ByteBuffer
import java.util.zip.CRC32C

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{TaskContext, TaskContextImpl}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

import org.apache.spark.shuffle.adaptive.fetch.FetcherFakes
import org.apache.spark.shuffle.adaptive.fetch.FetcherFakes._
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.FetchOrder
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.metrics.{CombineCounters, FetchCounters}
import org.apache.spark.shuffle.adaptive.combine.protocol.{CombinedAnswer, CombinedPayload, CombinedReadRequest, CombinedSegment}
import org.apache.spark.shuffle.adaptive.combine.reduce.CombinedRead

/**
 * A reduce task reading what another executor combined of its partition: one request for its
 * segments besides that executor's blocks (which hold what its map outputs did not fold), a
 * segment read where every map output it holds is one the task reads, skipped where it holds
 * none, and every other case a fetch failure naming the executor: the segments are the only copy
 * of what was folded.
 */
class CombinedReadSuite extends AnyFunSuite {

  private val self = BlockManagerId("local-exec", "local-host", 1000)
  private val home = BlockManagerId("exec-1", "host-1", 1001)

  private val first = ShuffleBlockId(0, 11, 5)
  private val second = ShuffleBlockId(0, 12, 5)
  private val firstBytes = Array.tabulate[Byte](300)(i => (i * 7).toByte)
  private val secondBytes = Array.tabulate[Byte](200)(i => (i * 3 + 1).toByte)
  private val combined = Array.tabulate[Byte](120)(i => (i * 5 + 2).toByte)
  // The map outputs at `home` the task reads: 11 and 12 wrote blocks, 14 folded all its rows.
  private val kept = Map(11L -> 0, 12L -> 1, 14L -> 2)
  private val files = Map[String, Array[Byte]](first.name -> firstBytes, second.name -> secondBytes)

  private def crc(bytes: Array[Byte]): Long = {
    val c = new CRC32C
    c.update(bytes)
    c.getValue
  }

  /**
   * What the executor answers: segments of `maps` (each `combined`), checksummed as `sum`, and
   * `lost` map outputs of partition 5.
   */
  private def answer(
      segments: Seq[Seq[Long]],
      sum: Array[Byte] => Long = crc,
      lost: Seq[Long] = Nil,
      known: Boolean = true): Array[Byte] = {
    val header = CombinedPayload.encode(
      CombinedAnswer(
        known,
        if (lost.isEmpty) Nil else Seq(5 -> lost.toArray),
        segments.map(maps => CombinedSegment(5, 7, combined.length, sum(combined), maps.toArray))))
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
    val read = new CombinedRead(0, 5, 6, home, kept, 100, counters.combine)
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
      Iterator(
        home -> Seq((first, firstBytes.length.toLong, 0), (second, secondBytes.length.toLong, 1))),
      wrapper,
      settings,
      settings.elasticLimit(),
      metrics,
      counters,
      batch = batch,
      bundles = Seq(home -> read),
      concatenate = concatenate)

    /** What was served, as (block id, bytes): a segment as its first map output's block. */
    def readAll(): Set[(BlockId, Seq[Byte])] = {
      val out = mutable.ArrayBuffer.empty[(BlockId, Seq[Byte])]
      while (fetcher.hasNext) {
        val (id, in) = fetcher.next()
        try out += id -> readFully(in).toSeq
        finally in.close()
      }
      assert(out.distinct.size === out.size, s"served twice: $out")
      out.toSet
    }

    /** The fetch failure reading fails with. */
    def failure(): FetchFailedException = {
      val e = intercept[FetchFailedException](readAll())
      assert(e.toTaskFailedReason.asInstanceOf[org.apache.spark.FetchFailed].bmAddress === home)
      assert(e.getMessage.contains(CombineCounters.OnlyCopy), e.getMessage)
      e
    }

    def count(counter: CombineCounters.Counter): Long = counters.combine(counter)

    def finish(): Unit = {
      context.markTaskCompleted(None)
      (transport.buffers ++ local.buffers).foreach(b => assert(!b.overReleased && b.refs == 0, b))
    }
  }

  private val combinedName = CombinedReadRequest(0, 5, 6).blockId.name

  /** Serves the combined read with `combinedAnswer`, and blocks from their files. */
  private def serving(combinedAnswer: Array[Byte]): Call => Unit = call =>
    call.blockIds.foreach { id =>
      if (id == combinedName) call.succeed(id, combinedAnswer)
      else call.succeed(id, files(id))
    }

  private val fromFiles: Set[(BlockId, Seq[Byte])] =
    Set(first -> firstBytes.toSeq, second -> secondBytes.toSeq)

  test("segments of map outputs the task reads are read besides the files' blocks") {
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L, 14L)))))
    // Served as its first map output's block, which a failure while it is read names.
    assert(r.readAll() === fromFiles + (first -> combined.toSeq))
    assert(r.count(CombineCounters.SegmentsRead) === 1 && r.count(CombineCounters.RowsOut) === 7)
    assert(r.count(CombineCounters.BytesOut) === combined.length)
    r.finish()
  }

  test("a segment of map outputs Spark no longer keeps is skipped (they ran again, whole)") {
    val r = new Reading(serving(answer(Seq(Seq(21L, 22L), Seq(11L, 12L)))))
    assert(r.readAll() === fromFiles + (first -> combined.toSeq))
    assert(
      (r.count(CombineCounters.StaleSegments), r.count(CombineCounters.SegmentsRead)) === ((1, 1)))
    r.finish()
  }

  test(
    "a segment holding a map output the task reads with one it must not fails the fetch, " +
      "naming the executor") {
    // Map 13: an attempt Spark did not keep, or a map outside the task's range.
    val r = new Reading(serving(answer(Seq(Seq(11L, 13L), Seq(12L)))))
    val e = r.failure()
    assert(e.getMessage.contains("with others it must not (13)"), e.getMessage)
    assert(r.count(CombineCounters.SegmentsRead) === 0)
    r.finish()
  }

  test("a map output in two segments (its fold found no room part way) is read from both") {
    val r = new Reading(serving(answer(Seq(Seq(11L), Seq(11L, 12L)))), concatenate = true)
    assert(r.readAll() === fromFiles + (r.read.id -> (combined ++ combined).toSeq))
    assert(r.count(CombineCounters.SegmentsRead) === 2)
    r.finish()
  }

  test("a segment whose checksum does not match fails the fetch") {
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L)), sum = bytes => crc(bytes) + 1)))
    assert(r.failure().getMessage.contains("is corrupt"))
    r.finish()
  }

  test("a combined read that cannot be fetched fails the fetch: the files alone lack its rows") {
    val r = new Reading(call =>
      call.blockIds.foreach { id =>
        if (id == combinedName) call.fail(id, new IOException("executor lost"))
        else call.succeed(id, files(id))
      })
    r.failure()
    assert(r.counters(FetchCounters.ChunkFallbacks) === 0)
    r.finish()
  }

  test("an answer of another length than its header says fails the fetch") {
    val whole = answer(Seq(Seq(11L, 12L)))
    Seq(whole :+ 1.toByte, whole.dropRight(1)).foreach { bytes =>
      val r = new Reading(serving(bytes))
      r.failure()
      assert(r.count(CombineCounters.SegmentsRead) === 0)
      r.finish()
    }
  }

  test("an executor that no longer holds the shuffle's combined records fails the fetch") {
    val r = new Reading(serving(answer(Nil, known = false)))
    assert(r.failure().getMessage.contains("no longer holds"))
    r.finish()
  }

  test("a lost map output the task reads fails the fetch; one it does not read does not") {
    val failing = new Reading(serving(answer(Seq(Seq(11L)), lost = Seq(21L, 12L))))
    assert(failing.failure().getMessage.contains("lost what map output 12 folded"))
    failing.finish()
    val r = new Reading(serving(answer(Seq(Seq(11L)), lost = Seq(21L))))
    assert(r.readAll() === fromFiles + (first -> combined.toSeq))
    r.finish()
  }

  test("a segment found corrupt when opened fails the fetch: it is the only copy") {
    val corrupting = (id: BlockId, in: InputStream) =>
      if (id == first && in.available() == combined.length) new FailingStream(in, 3)
      else new FilterInputStream(in) {}
    val r = new Reading(serving(answer(Seq(Seq(11L, 12L)))), corrupting)
    val e = intercept[FetchFailedException](r.readAll())
    assert(e.getMessage.contains("Combined records from"), e.getMessage)
    assert(r.counters(FetchCounters.CorruptRefetches) === 0)
    r.finish()
  }

  test("segments whose blocks may be read back to back are one stream") {
    val r = new Reading(serving(answer(Seq(Seq(11L), Seq(12L)))), concatenate = true)
    assert(r.readAll() === fromFiles + (r.read.id -> (combined ++ combined).toSeq))
    assert(
      r.count(CombineCounters.SegmentsRead) === 2 && r.counters(
        FetchCounters.BlocksFromStores) === 0)
    r.finish()
  }

  test("where the task fetches in batches, the files' blocks come as batches beside it") {
    val r = new Reading(
      call =>
        call.blockIds.foreach { id =>
          if (id == combinedName) call.succeed(id, answer(Nil))
          else call.succeed(id, files(id.stripSuffix("_6")))
        },
      batch = true)
    val read = r.readAll()
    assert(read.map(_._1.name) === Set("shuffle_0_11_5_6", "shuffle_0_12_5_6"))
    r.finish()
  }

  test("the answer round-trips, each set of map ids once") {
    val answer = CombinedAnswer(
      known = true,
      Seq(4 -> Array(7L, 9L)),
      Seq(
        CombinedSegment(3, 10, 99, 12345L, Array(1L, 5L)),
        CombinedSegment(4, 2, 8, 6L, Array(5L, 1L)),
        CombinedSegment(4, 0, 0, 0L, Array(Long.MaxValue))))
    val encoded = CombinedPayload.encode(answer)
    val padded = ByteBuffer.allocate(encoded.remaining + 3)
    padded.put(encoded).flip()
    val (decoded, length) = CombinedPayload.decode(padded)
    assert(length === encoded.limit())
    assert(
      decoded.known && decoded.lost.map { case (p, ids) => p -> ids.toSeq } === Seq(
        4 -> Seq(7L, 9L)))
    assert(decoded.segments.map(s =>
      (s.partition, s.rows, s.length, s.checksum, s.mapIds.toSeq.sorted)) ===
      answer.segments.map(s => (s.partition, s.rows, s.length, s.checksum, s.mapIds.toSeq.sorted)))
  }
}
