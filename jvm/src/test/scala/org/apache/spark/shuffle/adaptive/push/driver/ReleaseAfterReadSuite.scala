package org.apache.spark.shuffle.adaptive.push.driver

import scala.collection.mutable
import scala.concurrent.{Future, Promise}
import scala.concurrent.duration._

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.scheduler.{SparkListenerJobStart, SparkListenerStageCompleted}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

class ReleaseAfterReadSuite extends AnyFunSuite {

  private val executors = (0 until 3).map(i => BlockManagerId(i.toString, s"host-$i", 7000))
  private val table = TableArithmetic.uniform(6, executors)

  /** Who was asked to release which shuffle, in order; executor 2 never answers. */
  private val asked = mutable.ArrayBuffer.empty[(String, Int)]
  private def release(owner: BlockManagerId, shuffleId: Int): Future[Long] = {
    asked += owner.executorId -> shuffleId
    if (owner.executorId == "2") Promise[Long]().future else Future.successful(100L)
  }

  private def stage(id: Int, parents: Seq[Int], shuffle: Option[Int], failed: Boolean = false) =
    StageInfos.of(id, parents, shuffle, failed)

  test("a completed stage that read a push shuffle has its owners release what was sealed") {
    val releases =
      new ReleaseAfterRead(release, 50.millis, ThreadUtils.sameThreadExecutorService())
    releases.register(7, () => Some(Seq(table)))
    releases.register(8, () => None) // a shuffle that was pulled: no owners
    // Stage 1 writes shuffle 7, stage 2 shuffle 8 (reading nothing pushed), stage 3 reads both.
    releases.onJobStart(SparkListenerJobStart(0, 0L, Seq(stage(1, Nil, Some(7)))))
    releases.onStageCompleted(SparkListenerStageCompleted(stage(1, Nil, Some(7))))
    releases.onJobStart(SparkListenerJobStart(1, 0L, Seq(stage(2, Nil, Some(8)))))
    releases.onStageCompleted(SparkListenerStageCompleted(stage(2, Nil, Some(8))))
    assert(asked.isEmpty, "a map stage's end releases nothing")
    // A failed attempt of the reading stage will be retried: nothing goes.
    releases.onStageCompleted(SparkListenerStageCompleted(stage(3, Seq(1, 2), None, true)))
    assert(asked.isEmpty)
    releases.onStageCompleted(SparkListenerStageCompleted(stage(3, Seq(1, 2), None)))
    assert(asked.toSeq === Seq("0" -> 7, "1" -> 7, "2" -> 7))
    // An owner that does not answer costs one deadline and frees nothing as far as we know.
    assert(releases.releaseAt(7, Seq(table)) === 200L)
    // A later job reads shuffle 7 again: its map stage is a new stage, which it skips.
    asked.clear()
    releases.onJobStart(
      SparkListenerJobStart(2, 0L, Seq(stage(5, Nil, Some(7)), stage(6, Seq(5), None))))
    releases.onStageCompleted(SparkListenerStageCompleted(stage(6, Seq(5), None)))
    assert(asked.map(_._2).toSet === Set(7))
    // Once removed, a shuffle is asked nothing more.
    asked.clear()
    releases.remove(7)
    releases.onStageCompleted(SparkListenerStageCompleted(stage(4, Seq(1), None)))
    assert(asked.isEmpty)
  }

  test("an owner table that cannot be read releases nothing and throws nothing") {
    val releases =
      new ReleaseAfterRead(release, 50.millis, ThreadUtils.sameThreadExecutorService())
    releases.register(7, () => Some(Seq.empty[OwnerTable]))
    releases.onJobStart(SparkListenerJobStart(0, 0L, Seq(stage(1, Nil, Some(7)))))
    releases.onStageCompleted(SparkListenerStageCompleted(stage(2, Seq(1), None)))
    assert(asked.isEmpty)
  }
}
