package org.apache.spark.shuffle.adaptive.fetch

import java.io.{InputStream, IOException}
import java.util.Properties

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{FetchFailed, SparkConf, TaskContext}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.serializer.{JavaSerializer, KryoSerializer}
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}

import FetcherFakes._

class BatchFetchSuite extends AnyFunSuite {

  private case class Row(
      name: String,
      requested: Boolean = true,
      relocatable: Boolean = true,
      compressed: Boolean = true,
      concatenates: Boolean = true,
      oldProtocol: Boolean = false,
      encrypted: Boolean = false,
      batched: Boolean)

  // Spark's conditions one at a time, from the one case where batches are formed.
  private val table = Seq(
    Row("all conditions hold", batched = true),
    Row("the task did not ask for batches", requested = false, batched = false),
    Row("records cannot be relocated", relocatable = false, batched = false),
    Row("the codec's streams cannot be concatenated", concatenates = false, batched = false),
    Row(
      "uncompressed, so no codec to concatenate",
      compressed = false,
      concatenates = false,
      batched = true),
    Row("the old fetch protocol", oldProtocol = true, batched = false),
    Row("I/O encryption", encrypted = true, batched = false))

  for (row <- table) {
    test(s"batch fetch conditions: ${row.name} -> ${row.batched}") {
      assert(
        BatchFetch.enabled(
          row.requested,
          row.relocatable,
          row.compressed,
          row.concatenates,
          row.oldProtocol,
          row.encrypted) === row.batched)
    }
  }

  test("batch fetch conditions read from a Spark conf, serializer and the task's property") {
    def context(property: Option[String]): TaskContext = {
      val props = new Properties
      property.foreach(
        props.setProperty(SortShuffleManager.FETCH_SHUFFLE_BLOCKS_IN_BATCH_ENABLED_KEY, _))
      val c = TaskContext.empty()
      c.getLocalProperties.putAll(props)
      c
    }
    val conf = new SparkConf(false)
    val kryo = new KryoSerializer(conf)
    val asked = context(Some("true"))
    assert(BatchFetch.enabled(conf, kryo, 0, 5, asked))
    // One partition, or no property set by AQE: nothing to batch.
    assert(!BatchFetch.enabled(conf, kryo, 3, 4, asked))
    assert(!BatchFetch.enabled(conf, kryo, 0, 5, context(None)))
    assert(!BatchFetch.enabled(conf, kryo, 0, 5, context(Some("false"))))
    assert(!BatchFetch.enabled(conf, new JavaSerializer(conf), 0, 5, asked))
    assert(
      !BatchFetch.enabled(conf.clone.set("spark.io.encryption.enabled", "true"), kryo, 0, 5, asked))
    assert(
      !BatchFetch
        .enabled(conf.clone.set("spark.shuffle.useOldFetchProtocol", "true"), kryo, 0, 5, asked))
    for (codec <- Seq("lz4", "zstd", "snappy", "lzf")) {
      assert(
        BatchFetch.enabled(conf.clone.set("spark.io.compression.codec", codec), kryo, 0, 5, asked),
        codec)
    }
  }

  private def ref(mapId: Long, reduceId: Int, size: Long, mapIndex: Int): BlockRef =
    BlockRef(ShuffleBlockId(3, mapId, reduceId), size, mapIndex)

  test("merge: one batch block per map, spanning its partitions, sizes summed") {
    val blocks = Seq(
      ref(10, 4, 5, 0),
      ref(10, 5, 6, 0),
      ref(10, 7, 7, 0),
      ref(11, 4, 8, 1),
      ref(12, 6, 9, 2),
      ref(12, 7, 1, 2))
    assert(
      BatchFetch.merge(blocks) === Seq(
        // Partition 6 of map 10 was empty (left out); the range reads its zero bytes.
        BlockRef(ShuffleBlockBatchId(3, 10, 4, 8), 18, 0),
        // A block alone is a batch too: a request holds one kind of id, never both.
        BlockRef(ShuffleBlockBatchId(3, 11, 4, 5), 8, 1),
        BlockRef(ShuffleBlockBatchId(3, 12, 6, 8), 10, 2)))
    assert(BatchFetch.merge(Nil).isEmpty)
  }

  test("merge without spanning gaps: blocks read elsewhere (merged chunks) are not read again") {
    val blocks = Seq(ref(10, 4, 5, 0), ref(10, 5, 6, 0), ref(10, 7, 7, 0))
    assert(
      BatchFetch.merge(blocks, acrossGaps = false) === Seq(
        BlockRef(ShuffleBlockBatchId(3, 10, 4, 6), 11, 0),
        BlockRef(ShuffleBlockBatchId(3, 10, 7, 8), 7, 0)))
  }

  test("merge keeps every byte and covers every partition of random map outputs") {
    val random = new Random(5L)
    for (_ <- 0 until 200) {
      val blocks = (0 until random.nextInt(6)).flatMap { m =>
        (0 until 8).filter(_ => random.nextBoolean()).map(r => ref(m, r, 1 + random.nextInt(50), m))
      }
      val merged = BatchFetch.merge(blocks)
      assert(merged.map(_.size).sum === blocks.map(_.size).sum)
      assert(merged.size === blocks.map(_.blockId.asInstanceOf[ShuffleBlockId].mapId).distinct.size)
      blocks.foreach { b =>
        val id = b.blockId.asInstanceOf[ShuffleBlockId]
        assert(merged.count { m =>
          val batch = m.blockId.asInstanceOf[ShuffleBlockBatchId]
          batch.mapId == id.mapId && batch.startReduceId <= id.reduceId &&
          id.reduceId < batch.endReduceId && m.mapIndex == b.mapIndex
        } === 1)
      }
    }
  }

  private val local = BlockManagerId("self", "host-a", 1000)
  private val exec1 = BlockManagerId("exec-1", "host-1", 1001)

  /** Map m's data for partitions 0 until 4: partition r holds (r + 1) * 10 bytes. */
  private def partitions(mapId: Long): Seq[(BlockId, Long, Int)] =
    (0 until 4).map(r => (ShuffleBlockId(3, mapId, r): BlockId, (r + 1) * 10L, mapId.toInt))

  private def bytesOf(id: BlockId): Array[Byte] = {
    val batch = id.asInstanceOf[ShuffleBlockBatchId]
    (batch.startReduceId until batch.endReduceId)
      .flatMap(r => Array.fill((r + 1) * 10)((batch.mapId * 16 + r).toByte))
      .toArray
  }

  private def fetcher(transport: FakeTransport, batch: Boolean): ShuffleBlockFetcher = {
    val localBatch = ShuffleBlockBatchId(3, 0, 0, 4)
    val settings = AdaptiveFetchTestKit.settings("naive", limit = 1000, increment = 1000)
    FetcherFakes.newFetcher(
      TaskContext.empty(),
      transport,
      new FakeLocal(
        local,
        Map(localBatch -> Blk(ShuffleBlockId(3, 0, 0), bytesOf(localBatch), 0)),
        Set.empty),
      Iterator(local -> partitions(0), exec1 -> (partitions(1) ++ partitions(2))),
      (_: BlockId, in: InputStream) => in,
      settings,
      settings.elasticLimit(),
      new TempShuffleReadMetrics,
      batch = batch)
  }

  test("with batches on, each map output is asked for, served and counted as one block") {
    val transport = new FakeTransport
    transport.onFetch = call => call.blockIds.foreach(n => call.succeed(n, bytesOf(BlockId(n))))
    val f = fetcher(transport, batch = true)
    val served = Iterator
      .continually(f)
      .takeWhile(_.hasNext)
      .map(_.next())
      .map { case (id, in) =>
        try assert(readFully(in).toSeq === bytesOf(id).toSeq)
        finally in.close()
        id
      }
      .toSeq
    assert(
      served.toSet === Set[BlockId](
        ShuffleBlockBatchId(3, 0, 0, 4),
        ShuffleBlockBatchId(3, 1, 0, 4),
        ShuffleBlockBatchId(3, 2, 0, 4)))
    assert(transport.calls.flatMap(_.blockIds).sorted === Seq("shuffle_3_1_0_4", "shuffle_3_2_0_4"))
  }

  test("with batches off, every partition is asked for separately") {
    val transport = new FakeTransport
    fetcher(transport, batch = false)
    assert(transport.calls.flatMap(_.blockIds).size === 8)
    assert(transport.calls.flatMap(_.blockIds).forall(BlockId(_).isInstanceOf[ShuffleBlockId]))
  }

  test("a failed batch block fails the fetch for its map and first partition") {
    val transport = new FakeTransport
    transport.onFetch = call => call.blockIds.foreach(n => call.fail(n, new IOException("reset")))
    val e = intercept[FetchFailedException] {
      val f = fetcher(transport, batch = true)
      while (f.hasNext) f.next()._2.close()
    }
    val reason = e.toTaskFailedReason.asInstanceOf[FetchFailed]
    assert((reason.bmAddress, reason.shuffleId, reason.reduceId) === ((exec1, 3, 0)))
    assert(Set(1L, 2L).contains(reason.mapId))
    assert(reason.mapIndex === reason.mapId.toInt)
  }
}
