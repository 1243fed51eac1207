package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, ExecutorService, TimeUnit}

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.Success
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.storage.BlockManagerId
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
 * An executor that starts running tasks before a shuffle's map stage ends becomes one of its
 * owners: a version places the owners again with it among them ([[joined]]).
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
  // Shuffles registered whose map stage was not submitted yet.
  private[this] val unsubmitted = ConcurrentHashMap.newKeySet[Int]()

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
      newest: () => Option[OwnerTable]): Unit = {
    shuffles.put(shuffleId, new Placing(numMaps, numPartitions, newest))
    unsubmitted.add(shuffleId)
  }

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
    unsubmitted.remove(shuffleId)
    Option(groupOf.remove(shuffleId)).foreach { group =>
      group.synchronized {
        group.members -= shuffleId
        if (group.members.isEmpty) groups.remove(group.key)
      }
    }
  }

  override def onStageSubmitted(submitted: SparkListenerStageSubmitted): Unit =
    submitted.stageInfo.shuffleDepId.filter(shuffles.containsKey).foreach { shuffleId =>
      unsubmitted.remove(shuffleId)
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

  /**
   * `executor` runs tasks now ([[ReadyExecutors]], on the listener bus's thread): every push
   * shuffle whose map stage has not ended takes it among its owners, from its next map output
   * on. An application's first job is often submitted before every executor's block manager
   * registered (Spark counts an executor registered before its block manager is), and its table
   * then has only the executors that had: one owner merged everything, and under
   * push.reliability=replicated an executor owning alone had no other to replicate its map
   * outputs to (losing it reran them). Executors that dynamic allocation adds while a map stage
   * runs join as well; none before it runs a task, as [[ReadyExecutors]] says why. Shuffles
   * already mapped keep their owners, where their reduce tasks read.
   */
  def joined(executor: BlockManagerId): Unit = {
    val mapping = (stages.values.asScala.map(_._1) ++ unsubmitted.asScala).toSet
    mapping.foreach { shuffleId =>
      Option(shuffles.get(shuffleId)).foreach { placing =>
        thread.execute(() => guarded(shuffleId)(join(shuffleId, placing, executor, mapping)))
      }
    }
  }

  /**
   * `shuffleId` takes `executor` among its owners: placed by the sizes its map outputs predict
   * so far, or in equal ranges while none is known. In a co-partitioned group whose table was
   * chosen, the chosen table takes it, and the members still `mapping` adopt it.
   */
  private def join(
      shuffleId: Int,
      placing: Placing,
      executor: BlockManagerId,
      mapping: Set[Int]): Unit = {
    def withExecutor(current: OwnerTable): Option[OwnerTable] =
      if (current.owners.contains(executor)) None
      else {
        val predicted = predict(shuffleId, placing.numPartitions)
        val sizes =
          if (predicted.exists(_ > 0)) predicted.map(_.toDouble)
          else Array.fill(current.numPartitions)(1.0)
        val live = current.owners.filterNot(o => current.lost(o.executorId)) :+ executor
        Some(
          TableArithmetic
            .balanced(sizes, live)
            .copy(lost = current.lost, version = current.version + 1))
      }
    val group = Option(groupOf.get(shuffleId))
    group.filter(g => g.synchronized(g.chosen.isDefined)) match {
      case Some(chosenFor) =>
        chosenFor.synchronized {
          chosenFor.chosen.flatMap(withExecutor).foreach { next =>
            chosenFor.chosen = Some(next)
            chosenFor.members.filter(mapping).foreach(adopt(_, next))
          }
        }
      case None =>
        placing.newest().flatMap(withExecutor).foreach { next =>
          logInfo(
            s"Shuffle $shuffleId: executor ${executor.executorId} joined its owners " +
              s"(version ${next.version})")
          publish(shuffleId, next)
        }
    }
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
