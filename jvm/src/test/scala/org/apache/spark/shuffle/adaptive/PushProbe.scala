package org.apache.spark.shuffle.adaptive

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually._

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe

/** What the executors' pushers are doing, seen from a test's driver. */
private[adaptive] object PushProbe {

  /** Bytes each executor has queued to push and not yet placed. */
  def queued(sc: SparkContext, executors: Seq[String]): Map[String, Long] =
    ExecutorProbe.onEach(sc, executors)(() =>
      SparkEnv.get.shuffleManager.asInstanceOf[AdaptiveShuffleManager].pushQueue.get.bytesQueued)

  /**
   * Waits until no executor has anything left to push; the driver has then heard where every
   * pushed block arrived (a pusher says so before it takes a map output off its queue).
   */
  def awaitPushed(sc: SparkContext, executors: Seq[String]): Unit =
    eventually(timeout(60.seconds), interval(50.millis)) {
      assert(queued(sc, executors).values.forall(_ == 0))
    }
}
