package org.apache.spark.shuffle.adaptive

import java.nio.ByteBuffer

import scala.concurrent.Await
import scala.concurrent.duration._
import scala.util.{Failure, Success, Try}

import org.scalatest.concurrent.Eventually

import org.apache.spark.{LocalSparkContext, MapOutputTrackerMaster, Partition, ShuffleDependency, SparkConf, SparkContext, SparkEnv, SparkFunSuite, TaskContext, TestUtils}
import org.apache.spark.internal.config.{SERIALIZER, SHUFFLE_MANAGER}
import org.apache.spark.network.buffer.NioManagedBuffer
import org.apache.spark.rdd.RDD
import org.apache.spark.serializer.KryoSerializer
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_MAX_BLOCK_SIZE, PUSH_PLACE_BY_SIZE_AFTER, PUSH_QUEUE_SIZE, PUSH_SPILL_TO_PEERS, STORE_MAX_SIZE}
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.shuffle.adaptive.dummy.{DestinationPartitioner, DummySpec, ExecutorProbe, PinnedRDD}
import org.apache.spark.shuffle.adaptive.push.protocol.{HandOffUpload, RunUpload}
import org.apache.spark.shuffle.adaptive.push.owner.MergeStore
import org.apache.spark.shuffle.adaptive.transport.BlockUploads

/**
 * mode=push on three executors: a skewed DummyRDD (Zipf alpha = 1, 80 partitions) whose map
 * tasks all run on executor 0, so every byte the other executors merged was pushed there. Each
 * executor owns a third of the partitions (unless a case has them placed again by size).
 */
class PushClusterSuite
    extends SparkFunSuite
    with LocalSparkContext
    with SparkLogsCheck
    with Eventually {
  import SkewedShuffles.shuffledDigest

  private val MiB = 1024L * 1024
  private val spec = DummySpec(
    totalBytes = 40 * MiB,
    partitionBytes = MiB / 2,
    skew = 1.0,
    seed = 5,
    compressible = false)
  private val executors = Seq("0", "1", "2")

  /** By default every block is pushed: what is tested is where merged blocks are read. */
  private def start(
      storeSize: Long = 64 * MiB,
      maxPushedBlock: Long = MiB,
      spillToPeers: Boolean = true,
      placeBySizeAfter: Double = 0): Unit = {
    val conf = new SparkConf()
      .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
      .set(MODE, "push")
      .set(STORE_MAX_SIZE, storeSize)
      .set(PUSH_QUEUE_SIZE, 64 * MiB)
      .set(PUSH_MAX_BLOCK_SIZE, maxPushedBlock)
      .set(PUSH_SPILL_TO_PEERS, spillToPeers)
      .set(PUSH_PLACE_BY_SIZE_AFTER, placeBySizeAfter)
      // Batch fetch needs a serializer whose records may be concatenated.
      .set(SERIALIZER, classOf[KryoSerializer].getName)
      // The pinned map tasks wait for executor 0 rather than run elsewhere.
      .set("spark.locality.wait", "120s")
    sc = new SparkContext("local-cluster[3,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
    // Owners are the executors whose block managers the driver knows when the map stage starts.
    executors.foreach(ExecutorProbe.location(sc, _))
  }

  private def manager: AdaptiveShuffleManager =
    sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]

  private def dependencyOf(rdd: RDD[_]) =
    rdd.dependencies.head.asInstanceOf[ShuffleDependency[Int, Array[Byte], Array[Byte]]]

  private def application(): Map[String, Any] = PluginCounters.application(sc)

  private def mergeStores[T: scala.reflect.ClassTag](on: Seq[String])(
      what: MergeStore => T): Map[String, T] =
    ExecutorProbe.onEach(sc, on)(() =>
      what(
        SparkEnv.get.shuffleManager.asInstanceOf[AdaptiveShuffleManager].executor.push.get.merges))

  private def merged(on: Seq[String]): Map[String, Long] = mergeStores(on)(_.memory.used)

  /**
   * Six map tasks on executor 0, each with one block of `bytes(p)` random bytes for every
   * partition p, run and pushed: the map records, and the shuffle.
   */
  private def mapStageOnExecutor0(partitions: Int, bytes: Int => Int)
      : (RDD[(Int, Array[Byte])], ShuffleDependency[Int, Array[Byte], Array[Byte]]) = {
    // Each map task starts once the outputs before it were pushed, and a seventh without output
    // waits for the sixth's: the map stage ends with nothing queued, however slowly the pusher
    // (below the tasks' priority) runs, and nothing is dropped as too late.
    val maps = sc
      .parallelize(0 until 7, 7)
      .flatMap { m =>
        PushProbe.awaitPushedHere()
        val random = new java.util.Random(m)
        (0 until (if (m < 6) partitions else 0)).map { p =>
          val payload = new Array[Byte](bytes(p))
          random.nextBytes(payload)
          p -> payload
        }
      }
    val dependency = new ShuffleDependency[Int, Array[Byte], Array[Byte]](
      new PinnedRDD(maps, ExecutorProbe.location(sc, "0")),
      new DestinationPartitioner(partitions))
    sc.submitMapStage(dependency).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    (maps, dependency)
  }

  /** Records in an order that compares by content. */
  private def rows(records: Array[(Int, Array[Byte])]): Seq[(Int, String)] =
    records.map { case (p, b) => p -> b.mkString(",") }.sorted.toSeq

  private def awaitLost(executorId: String): Unit =
    eventually(timeout(60.seconds), interval(100.millis)) {
      assert(!sc.env.blockManager.master.getMemoryStatus.keys.exists(_.executorId == executorId))
    }

  test(
    "map outputs are merged at their partitions' owners and read there as chunks, which leave " +
      "memory once read; once an owner is lost, its partitions are read from the map outputs") {
    start()
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(shuffled)).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    val held = merged(executors)
    assert(held.values.forall(_ > 0), held)
    // The driver's summary, taken as the map stage ended: what each owner had merged by then,
    // of map outputs the driver knows.
    val shuffleId = dependencyOf(shuffled).shuffleId
    val summary = eventually(timeout(60.seconds), interval(100.millis)) {
      manager.driver.get.mergeSummaries(shuffleId)
    }
    assert(summary.ownersAnswered === 3 && summary.mergedBytes > 0, summary.toMap)
    assert(summary.mergedBytes <= held.values.sum, summary.toMap)
    val mapIds = sc.env.mapOutputTracker
      .asInstanceOf[MapOutputTrackerMaster]
      .shuffleStatuses(shuffleId)
      .mapStatuses
      .map(_.mapId)
      .toSet
    val mergedMaps = summary.mapsMerged.filter(_ != null).flatMap(_.toArray)
    assert(mergedMaps.nonEmpty && mergedMaps.forall(mapIds), summary.toMap)
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(app("bytes_from_stores") === read, app)
    // Few large reads: a chunk holds the blocks of many map outputs.
    val chunks = app("chunks_read").asInstanceOf[Long]
    assert(chunks > 0 && app("blocks_from_stores").asInstanceOf[Long] >= 4 * chunks, app)
    // Every map task ran on executor 0: what a reduce task read from the chunks of an executor
    // other than its own and other than 0 was pushed there first.
    val byExecutor = PluginCounters
      .snapshot(sc)("executors")
      .asInstanceOf[Map[String, Map[String, Any]]]
    val crossedTwice = byExecutor.map { case (reducer, counters) =>
      counters("bytes_from_stores_by_source")
        .asInstanceOf[Map[String, Long]]
        .collect {
          case (holder, bytes) if holder != reducer && holder != "0" => bytes
        }
        .sum
    }.sum
    assert(crossedTwice > 0 && app("bytes_crossed_twice") === crossedTwice, byExecutor)
    // The stage that read the shuffle completed: the owners freed what it read, though the
    // shuffle is still registered, and its buffers with it: every answer that served a chunk,
    // on the owner's own executor as on others, let it go.
    eventually(timeout(60.seconds), interval(100.millis)) {
      val stillHeld = merged(executors)
      assert(stillHeld.values.forall(_ == 0L), stillHeld)
      val buffers = mergeStores(executors)(_.directBytes)
      assert(buffers.values.forall(_ == 0L), buffers)
    }
    assert(mergeStores(executors)(_.policy.bytesReleasedAfterRead).values.sum === held.values.sum)
    assert(sc.env.mapOutputTracker.asInstanceOf[MapOutputTrackerMaster].containsShuffle(shuffleId))

    // A second shuffle of the same shape, merged, then one owner lost before it is read.
    val second = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(second)).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    killAndReplaceExecutor("2")
    awaitLost("2")
    assert(shuffledDigest(second) === SkewedShuffles.expected(sc, spec))
    val again = application()
    val readAgain = again("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum - read
    val fromChunksAgain = again("bytes_from_stores").asInstanceOf[Long] - read
    assert(readAgain > 0 && fromChunksAgain > 0 && fromChunksAgain < readAgain, again)
    assert(again("chunk_fallbacks") === 0L, "the lost owner was not asked")
  }

  test(
    "the driver places the owners again by the first map outputs' sizes; pushers follow the " +
      "new table, and reduce tasks read the chunks of both") {
    start(placeBySizeAfter = 0.05)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    val dependency = dependencyOf(shuffled)
    sc.submitMapStage(dependency).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    val versions = dependency.shuffleHandle
      .asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
      .ownerVersions
      .get
    assert(versions.map(_.version) === Seq(0, 1), versions)
    // Equal ranges would have owner 0 merge about 31 of the 40 MiB (see the hand-off case).
    val held = merged(executors)
    assert(held("0") < 0.6 * held.values.sum, held)
    assert(held.values.forall(_ > 0), held)
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(app("bytes_from_stores") === read && app("chunk_fallbacks") === 0L, app)
  }

  test(
    "owners whose memory is short move the hot partitions' chunks to disk, and reduce tasks " +
      "still read every block out of chunks") {
    // 40 MiB over three owners of 8 MiB each.
    start(storeSize = 8 * MiB, spillToPeers = false)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(shuffled)).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    val onDisk = mergeStores(executors)(_.policy.bytesMovedToDisk)
    assert(onDisk.values.sum > 0, onDisk)
    assert(mergeStores(executors)(_.handOffs.bytesHandedOff).values.sum === 0L)
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(app("bytes_from_stores") === read && app("chunk_fallbacks") === 0L, app)
  }

  test(
    "an owner whose memory is short hands its hot partitions' chunks to peers with room, " +
      "reduce tasks read them there, and once a peer holding some is lost, from the files") {
    // Owner 0 merges about 31 of the 40 MiB (Zipf alpha = 1 over 80 partitions, a third each)
    // in 16 MiB; owners 1 and 2 merge about 5 and 3 MiB and take chunks up to 8 MiB.
    start(storeSize = 16 * MiB)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(shuffled)).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    // The hand-off runs on in the background once the pushes are done; a chunk is counted by
    // its peer as it arrives and by its owner once the peer acknowledged it. Counted so far:
    // the second shuffle below hands off more.
    def handedOffOnce(before: Map[String, Long]): Map[String, Long] =
      eventually(timeout(60.seconds), interval(100.millis)) {
        val handedOff = mergeStores(executors)(_.handOffs.bytesHandedOff)
        val hosted = mergeStores(executors)(s => s.handOffs.bytesHostedForPeers)
          .map { case (e, bytes) => e -> (bytes - before.getOrElse(e, 0L)) }
        val fromZero = handedOff("0") - before.values.sum
        assert(fromZero > 0 && handedOff("1") === 0L && handedOff("2") === 0L, handedOff)
        assert(hosted("0") === 0L && hosted.values.sum === fromZero, hosted)
        hosted
      }
    val hosted = handedOffOnce(Map.empty)
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(app("bytes_from_stores") === read && app("chunk_fallbacks") === 0L, app)
    assert(app("chunks_at_peers").asInstanceOf[Long] > 0, app)

    // Once read, the peers' room is theirs again: a second shuffle is handed off as the first
    // was, and a peer holding some of it is lost before it is read.
    val second = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(second)).get()
    PushProbe.awaitPushed(sc, Seq("0"))
    val hostedAgain = handedOffOnce(hosted)
    val host = hostedAgain.filter(_._2 > 0).keys.min
    killAndReplaceExecutor(host)
    awaitLost(host)
    assert(shuffledDigest(second) === SkewedShuffles.expected(sc, spec))
    assert(application()("chunk_fallbacks").asInstanceOf[Long] > 0, "its chunks were asked for")
  }

  test(
    "a batch read of a partition range whose map outputs were partly merged: each map's " +
      "unmerged ranges are asked for as Spark's fetch protocol allows, and every row arrives") {
    // Even partitions' blocks (4 KiB) stay in their files, odd ones' (tens of bytes) are pushed,
    // so each map output is read as ranges with merged partitions between them.
    start(maxPushedBlock = 1024)
    val partitions = 12
    val (maps, dependency) = mapStageOnExecutor0(partitions, p => if (p % 2 == 0) 4096 else 8)
    // One task on executor 1 reads every partition, batch fetch on, as AQE's coalesced reads do.
    sc.setLocalProperty(SortShuffleManager.FETCH_SHUFFLE_BLOCKS_IN_BATCH_ENABLED_KEY, "true")
    val read =
      try new RangeReadRDD(dependency, ExecutorProbe.location(sc, "1")).collect()
      finally
        sc.setLocalProperty(SortShuffleManager.FETCH_SHUFFLE_BLOCKS_IN_BATCH_ENABLED_KEY, null)
    assert(rows(read) === rows(maps.collect()))
    val app = application()
    val fromStores = app("bytes_from_stores").asInstanceOf[Long]
    assert(app("chunks_read").asInstanceOf[Long] > 0 && app("chunk_fallbacks") === 0L, app)
    // Each owner's merged partitions lie between unmerged ones: one request for them all.
    assert(app("chunks_in_ranges").asInstanceOf[Long] > 0, app)
    assert(
      fromStores > 0 && fromStores < app("bytes_by_transport")
        .asInstanceOf[Map[String, Long]]
        .values
        .sum,
      app)
  }

  test(
    "a coalesced read of many small merged partitions asks each owner once for all of them, " +
      "and every row arrives") {
    start()
    val partitions = 60
    val (maps, dependency) = mapStageOnExecutor0(partitions, _ => 64)
    val read = new RangeReadRDD(dependency, ExecutorProbe.location(sc, "1")).collect()
    assert(rows(read) === rows(maps.collect()))
    val app = application()
    // 60 partitions, a chunk each, at three owners: three reads, one of them local.
    assert(app("chunks_in_ranges") === partitions.toLong, app)
    assert(app("chunks_read") === 3L && app("chunk_fallbacks") === 0L, app)
    assert(app("blocks_from_stores") === 6L * partitions, app)
  }

  test(
    "a peer that keeps none of a chunk handed to it answers so over the wire; no side logs " +
      "an error for it") {
    start()
    // Executor 0 hands each other executor the same chunk twice: the second is refused, as a
    // chunk held already is.
    val outcomes = ExecutorProbe.onEach(sc, Seq("0")) { () =>
      val env = SparkEnv.get
      val data = RunUpload.header(Array(4L)) ++ Array[Byte](1, 2, 3, 4)
      env.blockManager.master
        .getPeers(env.blockManager.blockManagerId)
        .sortBy(_.executorId)
        .flatMap { peer =>
          (1 to 2).map { _ =>
            val upload = BlockUploads.upload(
              env,
              peer.host,
              peer.port,
              HandOffUpload(99, 0, 0).blockId,
              new NioManagedBuffer(ByteBuffer.wrap(data)))
            Try(Await.result(upload, 30.seconds)) match {
              case Success(_) => "kept"
              case Failure(_: BlockUploads.RefusedUpload) => "refused"
              case other => other.toString
            }
          }
        }
    }
    assert(outcomes === Map("0" -> Seq("kept", "refused", "kept", "refused")))
  }

  test("an owner lost while pushes are under way: the result is still right") {
    start()
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    val mapStage = sc.submitMapStage(dependencyOf(shuffled))
    eventually(timeout(60.seconds), interval(10.millis)) {
      assert(merged(Seq("1"))("1") > 0)
    }
    assert(!mapStage.isCompleted, "the map stage ended before the first push: nothing was tested")
    killAndReplaceExecutor("1")
    mapStage.get()
    awaitLost("1")
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
  }
}

/** Partitions [0, n) of a shuffle read by one task on `location`, as an AQE coalesced read. */
private class RangeReadRDD[K, C](dependency: ShuffleDependency[K, _, C], location: String)
    extends RDD[(K, C)](dependency.rdd.context, Seq(dependency)) {

  override protected def getPartitions: Array[Partition] =
    Array(new Partition { override def index: Int = 0 })

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    Seq(location)

  override def compute(split: Partition, context: TaskContext): Iterator[(K, C)] =
    SparkEnv.get.shuffleManager
      .getReader[K, C](
        dependency.shuffleHandle,
        0,
        dependency.partitioner.numPartitions,
        context,
        context.taskMetrics().createTempShuffleReadMetrics())
      .read()
      .asInstanceOf[Iterator[(K, C)]]
}
