package org.apache.spark.shuffle.adaptive.push.map

import java.io.File
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually._

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkEnv, SparkFunSuite}
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.shuffle.adaptive.SparkLogsCheck
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.push.background.BackgroundPriority
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTableUpdates
import org.apache.spark.shuffle.adaptive.push.owner.MergeStore
import org.apache.spark.shuffle.adaptive.push.driver.TableArithmetic

/** The pusher of one executor that owns every partition: its pushes merge in its own store. */
class PusherSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  test("the open ranges of a run are those around its closed partitions") {
    val closed = new java.util.BitSet
    Seq(2, 3, 6).foreach(closed.set)
    assert(Pusher.openRanges(0, 8, closed) === Seq((0, 2), (4, 6), (7, 8)))
    assert(Pusher.openRanges(2, 4, closed) === Nil)
    assert(Pusher.openRanges(3, 7, closed) === Seq((4, 6)))
    assert(Pusher.openRanges(0, 2, new java.util.BitSet) === Seq((0, 2)))
  }

  private val Partitions = 4
  private val BlockSize = 100L

  /** A map output of `Partitions` blocks of `BlockSize` bytes: its file and its index. */
  private def mapOutput(dir: File, mapId: Long): (File, Array[Long]) = {
    val file = new File(dir, s"map-$mapId.data")
    Files.write(file.toPath, Array.fill((Partitions * BlockSize).toInt)(mapId.toByte))
    (file, Array.tabulate(Partitions + 1)(_ * BlockSize))
  }

  test(
    "what is still queued when the map stage ended is pushed, but for the partitions its owner " +
      "says are sealed") {
    sc = new SparkContext("local[1]", "test", new SparkConf())
    val dir = Files.createTempDirectory("pusher").toFile
    val conf = sc.conf
    val merges = new MergeStore(
      new MemoryBound(1 << 20),
      1 << 16,
      new MergeStore.Disk(
        () => File.createTempFile("merged", ".data", dir),
        SparkTransportConf.fromSparkConf(conf, "shuffle")),
      () => None,
      _ => ())
    // The pusher waits after its first map output until the test lets it go on.
    val parked = new CountDownLatch(1)
    @volatile var pusherNice = Int.MinValue
    val resume = new CountDownLatch(1)
    val queue = new PushQueue(1 << 20)
    val pusher: Pusher = new Pusher(
      merges,
      new OwnerTableUpdates,
      queue,
      chunkSize = 1 << 16,
      replication = None,
      niceness = 3,
      FlowSettings(1 << 20, 8, 8, 1 << 18, 1 << 20, false, false, false, "ADLER32"),
      askTimeout = 10.seconds,
      () =>
        if (Thread.currentThread().getName.startsWith("shuffle-push") && parked.getCount > 0) {
          pusherNice = BackgroundPriority.niceOfCurrentThread
          parked.countDown()
          resume.await(30, TimeUnit.SECONDS)
        })
    try {
      val self = SparkEnv.get.blockManager.blockManagerId
      val listener =
        pusher.forShuffle(TableArithmetic.uniform(Partitions, Seq(self)), maxBlockSize = 1 << 16)
      def commit(mapId: Long): Unit = {
        val (file, offsets) = mapOutput(dir, mapId)
        listener.committed(0, mapId, file, offsets)
      }
      commit(1)
      assert(parked.await(30, TimeUnit.SECONDS))
      assert(
        pusherNice === math.min(19, BackgroundPriority.niceOfCurrentThread + 3),
        "the pusher runs below the tasks")
      commit(2)
      commit(3)
      // The map stage ends and the reduce tasks of partitions 1 and 2 start while maps 2 and 3
      // wait to be pushed; a map output of a later attempt of the stage follows.
      pusher.mapStageEnded(0)
      assert(merges.serving.layout(0, 1, 3, forPeer = false).nonEmpty)
      commit(4)
      resume.countDown()
      eventually(timeout(30.seconds), interval(20.millis)) {
        assert(queue.bytesQueued === 0)
      }
      def merged = merges.serving.summary(0).map(p => p.partition -> p.mapIds.toArray.toSeq).toMap
      assert(
        merged === Map(
          0 -> Seq(1L, 2L, 3L, 4L),
          1 -> Seq(1L),
          2 -> Seq(1L),
          3 -> Seq(1L, 2L, 3L, 4L)))
      assert(merges.intake.bytesLate === 0, "nothing was sent to a sealed partition")
      // A run that arrives after its partitions were sealed is dropped, and counted late.
      val (file, offsets) = mapOutput(dir, 5)
      merges.intake.appendFromFile(0, 5, 0, Partitions, file, offsets)
      assert(merges.intake.bytesLate === 2 * BlockSize)
      assert(merged(0) === Seq(1L, 2L, 3L, 4L, 5L) && merged(1) === Seq(1L))
    } finally {
      resume.countDown()
      pusher.stop()
    }
  }
}
