package org.apache.spark.shuffle.adaptive

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually._

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe
import org.apache.spark.shuffle.adaptive.metrics.PluginMetricsSource

/** What the executors' pushers are doing, seen from a test's driver. */
private[adaptive] object PushProbe {

  /**
   * Bytes each executor has queued to push and not yet placed, as its metrics source reports
   * them (the gauge store.push_queued follows every change of the queue); None before its first
   * push.
   */
  def queued(sc: SparkContext, executors: Seq[String]): Map[String, Option[Long]] =
    ExecutorProbe.onEach(sc, executors)(() => queuedHere())

  private def queuedHere(): Option[Long] =
    SparkEnv.get.metricsSystem
      .getSourcesByName(PluginMetricsSource.Name)
      .flatMap(source => Option(source.metricRegistry.getGauges.get("store.push_queued")))
      .headOption
      .map(_.getValue.asInstanceOf[Number].longValue)

  /** In a task: waits until its executor has nothing left to push. */
  def awaitPushedHere(): Unit =
    eventually(timeout(60.seconds), interval(10.millis)) {
      assert(queuedHere().forall(_ == 0L))
    }

  /**
   * Waits until no executor has anything left to push; the driver has then heard where every
   * pushed block arrived (a pusher says so before it takes a map output off its queue).
   */
  def awaitPushed(sc: SparkContext, executors: Seq[String]): Unit =
    eventually(timeout(60.seconds), interval(50.millis)) {
      val pending = queued(sc, executors)
      assert(pending.values.forall(_.contains(0L)), pending)
    }
}
