package org.apache.spark.shuffle.adaptive.fetch

import java.io.{FileNotFoundException, InputStream, IOException}
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.TaskContext
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}

import AdaptiveFetchTestKit.blk
import FetcherFakes._
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.transport.{HostLocalDirs, HostLocalTransport}

class HostLocalReadSuite extends AnyFunSuite {

  private val self = BlockManagerId("self", "host-a", 1000)
  private val neighbour = BlockManagerId("neighbour", "host-a", 1001)
  private val far = BlockManagerId("far", "host-b", 1002)
  private val neighbourDirs = Array("/tmp/neighbour/blockmgr-1")

  private val byAddress = Seq(
    self -> Seq(blk(1, 0, 40), blk(1, 1, 50)),
    neighbour -> Seq(blk(1, 2, 60), blk(1, 3, 70), blk(1, 4, 80)),
    far -> Seq(blk(1, 5, 90), blk(1, 6, 100)))
  private val files: Map[BlockId, Array[Byte]] =
    byAddress.flatMap(_._2).map(b => (b.id: BlockId) -> b.bytes).toMap

  /** The neighbour's dirs (unless `missing`), found at once or, `async`, on another thread. */
  private class FakeDirs(missing: Boolean, unreadable: Set[BlockId], async: Boolean)
      extends HostLocalDirs {
    val lookUps = new ConcurrentLinkedQueue[String]
    val reads = new ConcurrentLinkedQueue[BlockId]

    override def lookUp(address: BlockManagerId)(found: Try[Array[String]] => Unit): Unit = {
      lookUps.add(address.executorId)
      val result =
        if (missing || address != neighbour) Failure(new IOException("executor is gone"))
        else Success(neighbourDirs)
      if (async) new Thread(() => found(result), "dirs-lookup").start() else found(result)
    }

    override def read(blockId: BlockId, dirs: Array[String]): ManagedBuffer = {
      assert(dirs sameElements neighbourDirs)
      reads.add(blockId)
      if (unreadable(blockId)) throw new FileNotFoundException(s"no data file for $blockId")
      new CountingBuffer(s"file $blockId", files(blockId), initialRefs = 0)
    }
  }

  private class Task(
      missing: Boolean = false,
      unreadable: Set[BlockId] = Set.empty,
      async: Boolean = false,
      lostOnNetwork: Set[BlockId] = Set.empty) {
    val dirs = new FakeDirs(missing, unreadable, async)
    val network = new FakeTransport
    network.onFetch = call =>
      call.blockIds.foreach { n =>
        if (lostOnNetwork(BlockId(n))) call.fail(n, new IOException("connection refused"))
        else call.succeed(n, files(BlockId(n)))
      }
    val context = TaskContext.empty()
    val metrics = new TempShuffleReadMetrics
    val counters = new FetchCounters
    val local =
      new FakeLocal(self, byAddress.head._2.map(b => (b.id: BlockId) -> b).toMap, Set.empty)
    val settings = AdaptiveFetchTestKit.settings("adaptive", limit = 1000, increment = 100)
    val fetcher = FetcherFakes.newFetcher(
      context,
      new HostLocalTransport("host-a", dirs, network),
      local,
      byAddress.iterator.map { case (a, bs) =>
        a -> bs.map(b => (b.id: BlockId, b.declaredSize, b.mapIndex))
      },
      (_: BlockId, in: InputStream) => in,
      settings,
      settings.elasticLimit(),
      metrics,
      counters)

    /** Reads every block, checking its bytes; returns the names served. */
    def readAll(): Seq[String] = {
      val served = Seq.newBuilder[String]
      while (fetcher.hasNext) {
        val (id, in) = fetcher.next()
        try assert(readFully(in).toSeq === files(id).toSeq, s"$id served with wrong bytes")
        finally in.close()
        served += id.toString
      }
      context.markTaskCompleted(None)
      served.result()
    }

    def networkBlocks: Seq[(String, String)] =
      network.calls.toSeq.flatMap(c => c.blockIds.map(c.address.executorId -> _))
  }

  private def names(address: BlockManagerId): Seq[String] =
    byAddress.toMap.apply(address).map(_.id.toString)

  for (async <- Seq(false, true)) {
    val lookup = if (async) "dirs found on another thread" else "dirs found at once"
    test(s"blocks of an executor on this host are read from its files ($lookup)") {
      val task = new Task(async = async)
      assert(task.readAll().sorted === files.keys.map(_.toString).toSeq.sorted)
      assert(task.dirs.reads.asScala.map(_.toString).toSeq.sorted === names(neighbour).sorted)
      // Only the executor on the other host is asked over the network.
      assert(task.networkBlocks.map(_._1).distinct === Seq("far"))
      assert(task.networkBlocks.map(_._2).sorted === names(far).sorted)
      val c = task.counters
      assert(
        c(FetchCounters.BytesByTransport).toMap === Map(
          FetchCounters.Local -> 90L,
          HostLocalTransport.Name -> 210L,
          "fake" -> 190L))
      assert(
        c(FetchCounters.BytesBySource).toMap === Map(
          "self" -> 90L,
          "neighbour" -> 210L,
          "far" -> 190L))
      assert(c(FetchCounters.RequestsByTransport).keySet === Set(HostLocalTransport.Name, "fake"))
      assert(c(FetchCounters.TransportFallbacks) === 0)
      // As in Spark, what was read from this host's disks counts as local.
      assert(task.metrics.localBlocksFetched === 5)
      assert(task.metrics.localBytesRead === 300)
      assert(task.metrics.remoteBlocksFetched === 2)
      assert(task.metrics.remoteBytesRead === 190)
    }
  }

  test("without the executor's dirs its blocks are fetched over the network, counted") {
    val task = new Task(missing = true)
    assert(task.readAll().size === 7)
    assert(task.dirs.lookUps.asScala.toSeq.distinct === Seq("neighbour"))
    assert(task.dirs.reads.isEmpty)
    assert(task.networkBlocks.map(_._2).sorted === (names(neighbour) ++ names(far)).sorted)
    assert(task.counters(FetchCounters.TransportFallbacks) === 3)
    assert(!task.counters(FetchCounters.BytesByTransport).contains(HostLocalTransport.Name))
    assert(task.counters(FetchCounters.BytesByTransport)("fake") === 400L)
    assert(task.metrics.remoteBlocksFetched === 5)
  }

  test("a block whose file cannot be read is fetched over the network; the others are not") {
    val unreadable = byAddress(1)._2(1).id
    val task = new Task(unreadable = Set(unreadable))
    assert(task.readAll().size === 7)
    assert(task.networkBlocks.filter(_._1 == "neighbour").map(_._2) === Seq(unreadable.toString))
    assert(task.counters(FetchCounters.TransportFallbacks) === 1)
    assert(task.counters(FetchCounters.BytesByTransport)(HostLocalTransport.Name) === 60L + 80L)
    assert(task.counters(FetchCounters.BytesByTransport)("fake") === 190L + 70L)
  }

  test("a block that neither its files nor the network can serve fails the fetch") {
    val unreadable = byAddress(1)._2.head.id
    val task = new Task(unreadable = Set(unreadable), lostOnNetwork = Set(unreadable))
    val e = intercept[org.apache.spark.shuffle.FetchFailedException](task.readAll())
    assert(e.getMessage.contains(unreadable.toString))
    assert(e.getMessage.contains("connection refused"))
  }
}
