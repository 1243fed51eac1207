package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, ExecutorService, TimeUnit}

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.Success
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

/**
 * The driver's placement of owners by size (iShuffle's balanced placement of predicted partition
 * sizes, Algorithm 1). A map stage starts with equal ranges of partitions per owner, since no
 * size is known; once `fraction` of its map tasks have succeeded, the sizes their MapStatuses
 * report predict each partition's, and the owners are placed again by them. A new version is
 * kept only if it lowers the most bytes one owner is predicted to merge by a tenth or more, or
 * gives a partition larger than an even share an owner of its own where its owner held a tenth
 * of a share or more besides ([[TableArithmetic.besideOversized]]): every version splits the
 * partitions it moves between two owners, which readers then both ask. (The second rule is what
 * places a shuffle with one hot partition: its owner's load hardly drops, but under equal ranges
 * its reduce task waits behind every other partition of the range.)
 *
 * Co-partitioned shuffles (the two sides of a join, [[coPartitioned]]) are placed as one: a
 * join's reduce task reads partition i of each, and runs at their owner only if both sides have
 * the same one. The first of them to be placed chooses by the bytes all of them predict so far,
 * and every other takes that table, now or when it joins.
 *
 * Nothing waits on it: it runs on its own thread (`thread`), once per map stage, and `publish`
 * hands the version to the shuffle's handle (which reduce tasks carry) and then to the
 * executors' pushers, which use it from their next map output on.
 *
 * @param predict a shuffle's bytes per partition so far, from its MapStatuses
 * @param publish keeps and sends out a shuffle's new version
 */
private[spark] final class OwnerPlacement(
    fraction: Double,
    predict: (Int, Int) => Array[Long],
    publish: (Int, OwnerTable) => Unit,
    thread: ExecutorService = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-owner-placement"))
    extends SparkListener
    with Logging {

  private final class Placing(
      val numMaps: Int,
      val numPartitions: Int,
      val newest: () => Option[OwnerTable])

  private[this] val shuffles = new ConcurrentHashMap[Int, Placing]
  // Map stage -> (shuffle, successful tasks so far).
  private[this] val stages = new ConcurrentHashMap[Int, (Int, Int)]
  // Map stages placed (or that had nothing to place).
  private[this] val placed = ConcurrentHashMap.newKeySet[Int]()

  /** Shuffles placed as one, and the table the first of them placed chose (guarded by itself). */
  private final class CoPartitioned(val key: Long) {
    val members = mutable.LinkedHashSet.empty[Int]
    var chosen: Option[OwnerTable] = None
  }

  private[this] val groups = new ConcurrentHashMap[Long, CoPartitioned]
  private[this] val groupOf = new ConcurrentHashMap[Int, CoPartitioned]

  /** A push shuffle of `numMaps` map tasks; `newest` is its newest owner table. */
  def register(
      shuffleId: Int,
      numMaps: Int,
      numPartitions: Int,
      newest: () => Option[OwnerTable]): Unit =
    shuffles.put(shuffleId, new Placing(numMaps, numPartitions, newest))

  /**
   * Shuffle `shuffleId` is co-partitioned with every other shuffle given the same `key`: their
   * partitions i are read by one task. A table already chosen for them is taken at once.
   */
  def coPartitioned(shuffleId: Int, key: Long): Unit = {
    val group = groups.computeIfAbsent(key, new CoPartitioned(_))
    groupOf.put(shuffleId, group)
    group.synchronized(group.members += shuffleId)
    thread.execute(() =>
      guarded(shuffleId)(group.synchronized(group.chosen.foreach(adopt(shuffleId, _)))))
  }

  def remove(shuffleId: Int): Unit = {
    shuffles.remove(shuffleId)
    Option(groupOf.remove(shuffleId)).foreach { group =>
      group.synchronized {
        group.members -= shuffleId
        if (group.members.isEmpty) groups.remove(group.key)
      }
    }
  }

  override def onStageSubmitted(submitted: SparkListenerStageSubmitted): Unit =
    submitted.stageInfo.shuffleDepId.filter(shuffles.containsKey).foreach { shuffleId =>
      placed.remove(submitted.stageInfo.stageId)
      stages.put(submitted.stageInfo.stageId, (shuffleId, 0))
    }

  // Listener events arrive on one thread: `stages` is read and written there only. A task's end
  // may reach listeners before its MapStatus reaches the tracker, so a stage whose sizes were
  // not known yet is tried again at its next task's end, up to as many more task ends as the
  // first try waited for: map outputs whose sizes stay unknown that long are empty, and each try
  // reads up to PushDriver.PredictFromMaps MapStatuses.
  override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
    if (end.reason == Success) Option(stages.get(end.stageId)).foreach { case (shuffleId, done) =>
      val placing = shuffles.get(shuffleId)
      val stage = end.stageId
      if (placing != null && !placed.contains(stage)) {
        stages.put(stage, (shuffleId, done + 1))
        val after = OwnerPlacement.after(fraction, placing.numMaps)
        if (done + 1 > 2 * after) {
          placed.add(stage)
        } else if (done + 1 >= after) {
          thread.execute { () =>
            guarded(shuffleId) {
              if (!placed.contains(stage) && place(shuffleId, placing)) placed.add(stage)
            }
          }
        }
      }
    }

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    stages.remove(completed.stageInfo.stageId)
    placed.remove(completed.stageInfo.stageId)
  }

  private def guarded(shuffleId: Int)(placing: => Unit): Unit =
    try placing
    catch {
      case NonFatal(e) => logWarning(s"Could not place shuffle $shuffleId's owners again", e)
    }

  /** Places `shuffleId` (and its group) by its sizes; false while no size is known. */
  private def place(shuffleId: Int, placing: Placing): Boolean =
    Option(groupOf.get(shuffleId)) match {
      case None =>
        (placing.newest() match {
          case Some(current) if shuffles.containsKey(shuffleId) =>
            val predicted = predict(shuffleId, placing.numPartitions)
            OwnerPlacement.next(current, predicted).foreach { next =>
              logPlaced(s"Shuffle $shuffleId", current, next, predicted)
              publish(shuffleId, next)
            }
            predicted.exists(_ > 0)
          case _ => true
        })
      case Some(group) =>
        group.synchronized {
          if (group.chosen.isEmpty) {
            val members = group.members.toSeq.filter { id =>
              Option(shuffles.get(id)).exists(_.numPartitions == placing.numPartitions)
            }
            for (current <- placing.newest() if members.contains(shuffleId)) {
              val predicted = members
                .map(id => predict(id, placing.numPartitions))
                .reduce((a, b) => a.indices.map(i => a(i) + b(i)).toArray)
              if (predicted.exists(_ > 0)) {
                val next = OwnerPlacement.next(current, predicted)
                next.foreach(
                  logPlaced(
                    s"Co-partitioned shuffles ${members.mkString(", ")}",
                    current,
                    _,
                    predicted))
                group.chosen = Some(next.getOrElse(current))
              }
            }
          }
          group.chosen.foreach(chosen => group.members.foreach(adopt(_, chosen)))
          group.chosen.isDefined || !group.members.contains(shuffleId)
        }
    }

  /** `shuffleId` takes its group's `chosen` owners, unless it has them or differs in partitions. */
  private def adopt(shuffleId: Int, chosen: OwnerTable): Unit =
    for {
      placing <- Option(shuffles.get(shuffleId)) if placing.numPartitions == chosen.numPartitions
      current <- placing.newest()
      if current.owners != chosen.owners || current.firstPartition != chosen.firstPartition
    } publish(shuffleId, chosen.copy(lost = current.lost, version = current.version + 1))

  private def logPlaced(
      what: String,
      current: OwnerTable,
      next: OwnerTable,
      predicted: Array[Long]): Unit = {
    val sizes = predicted.map(_.toDouble)
    logInfo(
      f"$what: owners placed again by the first map outputs' sizes (version ${next.version}); " +
        f"the most one owner merges: ${TableArithmetic.maxLoad(current, sizes)}%.0f -> " +
        f"${TableArithmetic.maxLoad(next, sizes)}%.0f bytes of those")
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
   * none unless that lowers the most bytes one owner merges by a tenth or more, or at least halves
   * what the owners of oversized partitions hold besides them, where that is a tenth of an even
   * share or more.
   */
  def next(current: OwnerTable, predicted: Array[Long]): Option[OwnerTable] = {
    val sizes = predicted.map(_.toDouble)
    val live = current.owners.filterNot(o => current.lost(o.executorId))
    if (sizes.length != current.numPartitions || sizes.sum <= 0 || live.isEmpty) None
    else {
      val placed = TableArithmetic.balanced(sizes, live).copy(version = current.version + 1)
      val lowersLoad =
        TableArithmetic.maxLoad(placed, sizes) <= 0.9 * TableArithmetic.maxLoad(current, sizes)
      val beside = TableArithmetic.besideOversized(current, sizes)
      val isolates = beside >= 0.1 * sizes.sum / live.size &&
        TableArithmetic.besideOversized(placed, sizes) <= 0.5 * beside
      if (lowersLoad || isolates) Some(placed) else None
    }
  }
}
