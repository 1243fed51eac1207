package org.apache.spark.shuffle.adaptive.push.driver

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.shuffle.adaptive.metrics.{FetchMetricsListener, ShuffleReadReport}

/**
 * mode=auto: whether each new shuffle is pushed, from what the reduce stages before it showed.
 * Pushing pays where moving bytes, not computing them, bounds a job: it crosses the links while
 * the map tasks compute, when under pull they sit idle, so the reduce tasks no longer wait for
 * blocks (iShuffle's "shuffle delay"). Where the reduce tasks of a pulled shuffle did not wait,
 * pushing would only add work (copies, merges, a second crossing for what is late), and where
 * CPU bounds the job the pusher, below the tasks' priority, would not get through anyway.
 *
 * So a shuffle is pushed once a reduce stage that read a pulled shuffle of at least
 * [[PushVerdict.MinEvidenceBytes]] from other executors waited for blocks `waitShare` of its
 * tasks' time or more; the newest such stage decides (as the links' load changes, the verdict
 * follows). Before any, nothing is pushed: it costs nothing, no store memory, no pusher. A stage
 * that read a pushed shuffle waits little by design, which says nothing of the links: it leaves
 * the verdict as it is. Each shuffle's verdict, with its reason, is kept for `explain` and the
 * metrics (the newest [[FetchMetricsListener.KeptShuffles]]).
 */
private[spark] final class PushVerdict(waitShare: Double) extends SparkListener {
  import PushVerdict._

  private[this] var current =
    Verdict(
      push = false,
      "no reduce stage has yet read a pulled shuffle of " +
        s"${MinEvidenceBytes >> 20} MiB or more from other executors")
  private[this] val byShuffle = mutable.TreeMap.empty[Int, Verdict]

  /** Whether `shuffleId`, being registered, is pushed; asked once per shuffle. */
  def decide(shuffleId: Int): Boolean = synchronized {
    byShuffle(shuffleId) = current
    FetchMetricsListener.keepNewest(byShuffle)
    current.push
  }

  def of(shuffleId: Int): Option[Verdict] = synchronized(byShuffle.get(shuffleId))

  /** Each kept shuffle's verdict, as the metrics report it. */
  def snapshot(): Map[Int, Map[String, Any]] = synchronized(byShuffle.toMap.map { case (id, v) =>
    id -> v.toMap
  })

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case read: ShuffleReadReport =>
      read.fetchWaitShare.foreach(observed(read.shuffleId, read.stageId, read.remoteBytes, _))
    case _ =>
  }

  /**
   * Stage `stageId`'s reduce tasks read `remoteBytes` of `shuffleId` from other executors and
   * waited for blocks `share` of their time.
   */
  def observed(shuffleId: Int, stageId: Int, remoteBytes: Long, share: Double): Unit =
    synchronized {
      val pushed = byShuffle.get(shuffleId).exists(_.push)
      if (!pushed && remoteBytes >= MinEvidenceBytes) {
        val waited =
          f"shuffle $shuffleId's reduce tasks (stage $stageId) waited for blocks " +
            f"${share * 100}%.0f%% of their time, reading ${remoteBytes >> 20} MiB from " +
            "other executors"
        current =
          if (share >= waitShare)
            Verdict(push = true, f"$waited (${waitShare * 100}%.0f%% or more)")
          else
            Verdict(
              push = false,
              f"$waited (under ${waitShare * 100}%.0f%%): their own work, not the links, bounds them")
      }
    }
}

private[spark] object PushVerdict {

  /**
   * The least a pulled shuffle's reduce stage read from other executors for its waits to say
   * anything of the links: a small shuffle's tasks wait for a few round trips, whatever the links.
   */
  val MinEvidenceBytes: Long = 32L << 20

  final case class Verdict(push: Boolean, why: String) {
    def toMap: Map[String, Any] = Map("verdict" -> (if (push) "push" else "pull"), "why" -> why)
  }
}
