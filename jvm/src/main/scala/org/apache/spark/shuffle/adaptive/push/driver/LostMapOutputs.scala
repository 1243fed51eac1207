package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.MapOutputTrackerMaster
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved}
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

/**
 * push.reliability=replicated, on the driver. Spark keeps a lost executor's map outputs
 * registered, since the shuffle's storage is declared reliable ([[AdaptiveShuffleDataIO]]):
 * reduce tasks read their blocks from the chunks merged at other executors. When an executor is
 * removed, this class unregisters, on a thread of its own, each of its map outputs of which some
 * non-empty block is merged at no live holder (`merged`: per partition, the map ids that the
 * owners in a shuffle's tables merged, lost ones left out), so that Spark reruns exactly those
 * map tasks when a stage next needs them. The outputs of executors lost before, kept then, are
 * checked again: one of their blocks may have been merged only at this one. A reduce task that
 * reaches such a block before that fails to fetch it from the lost executor, and Spark then
 * reruns every map task of that executor: right, only dearer.
 *
 * @param shuffles the push shuffles registered now, with their owner tables' versions
 * @param alive the executors the driver has
 */
private[driver] final class LostMapOutputs(
    shuffles: () => Map[Int, Seq[OwnerTable]],
    alive: () => Set[String],
    merged: (Int, Seq[OwnerTable]) => Array[Roaring64NavigableMap],
    tracker: MapOutputTrackerMaster)
    extends SparkListener
    with Logging {

  private[this] val thread = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-lost-outputs")
  private[this] val lost = new AtomicLong
  private[this] val kept = new AtomicLong
  private[this] val unregistered = new AtomicLong
  // Spark may announce a removal twice: a decommissioned executor tells the driver it leaves,
  // then its cluster manager that its process ended. Executor ids are never reused.
  private[this] val checked = ConcurrentHashMap.newKeySet[String]()

  override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
    thread.execute { () =>
      try executorLost(removed.executorId)
      catch {
        case NonFatal(e) =>
          logWarning(s"Map outputs of lost executor ${removed.executorId} not checked", e)
      }
    }

  /**
   * Unregisters the map outputs of `executorId`, and of the executors lost before it, that are
   * not held elsewhere.
   */
  def executorLost(executorId: String): Unit = if (checked.add(executorId)) {
    val live = alive() - executorId
    shuffles().foreach { case (shuffleId, tables) =>
      tracker.shuffleStatuses.get(shuffleId).foreach { status =>
        val orphans = status.withMapStatuses { statuses =>
          statuses.iterator.zipWithIndex.collect {
            case (s, index) if s != null && !live(s.location.executorId) =>
              (index, s.mapId, s.location, (p: Int) => s.getSizeForBlock(p))
          }.toSeq
        }
        if (orphans.nonEmpty) {
          val liveTables = tables.map(_.keepingOnly(live))
          val maps = merged(shuffleId, liveTables)
          val rerun = LostMapOutputs
            .notHeld(orphans.map { case (index, id, _, size) => (index, id, size) }, maps)
            .toSet
          orphans.foreach { case (index, _, location, _) =>
            if (rerun(index)) tracker.unregisterMapOutput(shuffleId, index, location)
          }
          val theirs = orphans.collect {
            case (index, _, location, _) if location.executorId == executorId => index
          }
          val keptOfTheirs = theirs.count(!rerun(_))
          unregistered.addAndGet(rerun.size)
          kept.addAndGet(keptOfTheirs)
          val owners = liveTables.flatMap(t => t.owners.filterNot(o => t.lost(o.executorId)))
          val said =
            s"Executor $executorId lost: $keptOfTheirs of its ${theirs.size} map outputs of " +
              s"shuffle $shuffleId are held elsewhere; ${rerun.size} map outputs of it and of " +
              "executors lost before will be rerun (live owners: " +
              s"${owners.map(_.executorId).distinct.mkString(", ")}; " +
              s"${maps.count(_ == null)} of ${maps.length} partitions merged nowhere)"
          // Under replicated push a rerun is what the replicas were to spare: worth a warning.
          if (rerun.isEmpty) logInfo(said) else logWarning(said)
        }
      }
    }
    // Last: a loss counted is one whose map outputs were all checked.
    lost.incrementAndGet()
  }

  /**
   * Executors lost, the map outputs each had when lost that were kept, and the map outputs
   * unregistered, so far.
   */
  def counts: Map[String, Long] = Map(
    "executors_lost" -> lost.get,
    "map_outputs_kept" -> kept.get,
    "map_outputs_rerun" -> unregistered.get)

  def stop(): Unit = {
    thread.shutdownNow()
    thread.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[driver] object LostMapOutputs {

  /**
   * The indices of `maps` (index, map id, size of its block of a partition) of which a non-empty
   * block of some partition p is not among `merged(p)` (null: none merged).
   */
  def notHeld(maps: Seq[(Int, Long, Int => Long)], merged: Array[Roaring64NavigableMap]): Seq[Int] =
    maps.collect {
      case (index, mapId, size)
          if merged.indices
            .exists(p => size(p) > 0 && (merged(p) == null || !merged(p).contains(mapId))) =>
        index
    }
}
