package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, ExecutorService, TimeUnit}

import scala.collection.mutable
import scala.concurrent.Future
import scala.concurrent.duration.FiniteDuration
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerJobStart, SparkListenerStageCompleted, StageInfo}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.protocol.Ask
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

/**
 * Frees owners' memory as soon as what it holds was read: when a stage that read a push shuffle
 * completes, every owner of it is asked (`release`, on this class's own thread, so that no
 * listener waits) to let go of the chunks of the partitions reduce tasks sealed there. Without
 * this a finished shuffle's chunks stay until memory runs short or Spark's cleaner unregisters
 * the shuffle, which waits for the driver's GC of its RDDs: minutes, in a long-lived
 * application. A partition read again later (a second action on the same shuffled RDD, an
 * exchange reused) reads its blocks from their map outputs' files, as it would had a push not
 * reached its owner; partitions no task has read stay merged.
 *
 * Not under push.reliability=replicated (the caller leaves it out): there a chunk may be the
 * only copy of a lost executor's map output, which a later read would have to rerun.
 */
private[driver] final class ReleaseAfterRead(
    release: (BlockManagerId, Int) => Future[Long],
    timeout: FiniteDuration,
    thread: ExecutorService = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-merge-release"))
    extends SparkListener
    with Logging {

  private[this] val owners = new ConcurrentHashMap[Int, () => Option[Seq[OwnerTable]]]
  // Each map stage's shuffle, for the newest stages: stage ids grow with time.
  private[this] val shuffleOfStage = mutable.TreeMap.empty[Int, Int]

  /** A push shuffle; `tables` gives its owner table's versions. */
  def register(shuffleId: Int, tables: () => Option[Seq[OwnerTable]]): Unit =
    owners.put(shuffleId, tables)

  def remove(shuffleId: Int): Unit = owners.remove(shuffleId)

  // A job lists every stage it may run, those it will skip too: a map stage whose outputs
  // exist is a new stage of the shuffle in each job that reads it, and is never submitted.
  override def onJobStart(jobStart: SparkListenerJobStart): Unit =
    jobStart.stageInfos.foreach(mapStage)

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    val stage = completed.stageInfo
    if (stage.failureReason.isEmpty) {
      val read = synchronized(stage.parentIds.flatMap(shuffleOfStage.get)).distinct
      for {
        shuffleId <- read
        tables <- Option(owners.get(shuffleId)).flatMap(_())
      } thread.execute(() => releaseAt(shuffleId, tables))
    }
  }

  private def mapStage(stage: StageInfo): Unit = stage.shuffleDepId.foreach { shuffleId =>
    synchronized {
      shuffleOfStage(stage.stageId) = shuffleId
      while (shuffleOfStage.size > ReleaseAfterRead.KeptStages) {
        shuffleOfStage -= shuffleOfStage.firstKey
      }
    }
  }

  /** Asks every owner of `shuffleId` at once; answers the bytes they freed. */
  def releaseAt(shuffleId: Int, tables: Seq[OwnerTable]): Long =
    try {
      val asked = OwnerTable.ranges(tables, 0, tables.head.numPartitions).map(_._1).distinct
      val freed = Ask.all(asked.map(owner => owner -> release(owner, shuffleId)), timeout)
      freed.iterator.flatMap(_._2.toOption).sum
    } catch {
      case NonFatal(e) =>
        // Its chunks stay until memory runs short or the shuffle is unregistered.
        logDebug(s"Could not ask shuffle $shuffleId's owners to release what was read", e)
        0L
    }

  def stop(): Unit = {
    thread.shutdownNow()
    thread.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[driver] object ReleaseAfterRead {

  /** Map stages whose shuffles are remembered: a reduce stage follows its map stages closely. */
  val KeptStages = 4096
}
