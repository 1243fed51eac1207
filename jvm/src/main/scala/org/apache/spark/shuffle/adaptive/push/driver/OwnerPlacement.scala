package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, TimeUnit}

import scala.util.control.NonFatal

import org.apache.spark.Success
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.protocol.OwnerTable

/**
 * The driver's placement of owners by size (iShuffle's balanced placement of predicted partition
 * sizes, Algorithm 1). A map stage starts with equal ranges of partitions per owner, since no
 * size is known; once `fraction` of its map tasks have succeeded, the sizes their MapStatuses
 * report predict each partition's, and the owners are placed again by them. A new version is
 * kept only if it lowers the most bytes one owner is predicted to merge by a tenth or more:
 * every version splits the partitions it moves between two owners, which readers then both ask.
 *
 * Nothing waits on it: it runs on its own thread, once per map stage, and `publish` hands the
 * version to the shuffle's handle (which reduce tasks carry) and then to the executors'
 * pushers, which use it from their next map output on.
 *
 * @param predict a shuffle's bytes per partition so far, from its MapStatuses
 * @param publish keeps and sends out a shuffle's new version
 */
private[spark] final class OwnerPlacement(
    fraction: Double,
    predict: (Int, Int) => Array[Long],
    publish: (Int, OwnerTable) => Unit)
    extends SparkListener
    with Logging {

  private final class Placing(
      val numMaps: Int,
      val numPartitions: Int,
      val newest: () => Option[OwnerTable])

  private[this] val shuffles = new ConcurrentHashMap[Int, Placing]
  // Map stage -> (shuffle, successful tasks so far); -1 once placed or not to place.
  private[this] val stages = new ConcurrentHashMap[Int, (Int, Int)]
  private[this] val thread = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-owner-placement")

  /** A push shuffle of `numMaps` map tasks; `newest` is its newest owner table. */
  def register(
      shuffleId: Int,
      numMaps: Int,
      numPartitions: Int,
      newest: () => Option[OwnerTable]): Unit =
    shuffles.put(shuffleId, new Placing(numMaps, numPartitions, newest))

  def remove(shuffleId: Int): Unit = shuffles.remove(shuffleId)

  override def onStageSubmitted(submitted: SparkListenerStageSubmitted): Unit =
    submitted.stageInfo.shuffleDepId.filter(shuffles.containsKey).foreach { shuffleId =>
      stages.put(submitted.stageInfo.stageId, (shuffleId, 0))
    }

  // Listener events arrive on one thread: `stages` is read and written there only.
  override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
    if (end.reason == Success) Option(stages.get(end.stageId)).foreach { case (shuffleId, done) =>
      val placing = shuffles.get(shuffleId)
      if (done >= 0 && placing != null) {
        if (done + 1 < OwnerPlacement.after(fraction, placing.numMaps)) {
          stages.put(end.stageId, (shuffleId, done + 1))
        } else {
          stages.put(end.stageId, (shuffleId, -1))
          thread.execute { () =>
            try place(shuffleId, placing)
            catch {
              case NonFatal(e) =>
                logWarning(s"Could not place shuffle $shuffleId's owners again", e)
            }
          }
        }
      }
    }

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit =
    stages.remove(completed.stageInfo.stageId)

  private def place(shuffleId: Int, placing: Placing): Unit =
    for (current <- placing.newest() if shuffles.containsKey(shuffleId)) {
      val predicted = predict(shuffleId, placing.numPartitions)
      OwnerPlacement.next(current, predicted).foreach { next =>
        val sizes = predicted.map(_.toDouble)
        logInfo(
          f"Shuffle $shuffleId: owners placed again by its first map outputs' sizes (version " +
            f"${next.version}); the most one owner merges: ${current.maxLoad(sizes)}%.0f -> " +
            f"${next.maxLoad(sizes)}%.0f bytes of those")
        publish(shuffleId, next)
      }
    }

  def stop(): Unit = {
    thread.shutdownNow()
    thread.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[spark] object OwnerPlacement {

  /** Successful map tasks after which a stage of `numMaps` tasks is placed again. */
  def after(fraction: Double, numMaps: Int): Int = math.max(1, math.ceil(fraction * numMaps).toInt)

  /**
   * The next version of `current`: its live owners, placed by `predicted` bytes per partition;
   * none unless that lowers the most bytes one owner merges by a tenth or more.
   */
  def next(current: OwnerTable, predicted: Array[Long]): Option[OwnerTable] = {
    val sizes = predicted.map(_.toDouble)
    val live = current.owners.filterNot(o => current.lost(o.executorId))
    if (sizes.length != current.numPartitions || sizes.sum <= 0 || live.isEmpty) None
    else {
      val placed = OwnerTable.balanced(sizes, live).copy(version = current.version + 1)
      if (placed.maxLoad(sizes) <= 0.9 * current.maxLoad(sizes)) Some(placed) else None
    }
  }
}
