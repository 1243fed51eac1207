package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.{ConcurrentHashMap, TimeUnit}

import scala.collection.mutable
import scala.concurrent.Future
import scala.concurrent.duration.FiniteDuration
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.protocol.Ask
import org.apache.spark.shuffle.adaptive.push.protocol.{MergedPartition, OwnerTable}

/**
 * What one shuffle's owners had merged when its map stage completed: per reduce partition the
 * bytes and the map outputs merged (a compressed bitmap of map ids, null where nothing was), and
 * how many owners answered. O(partitions) numbers plus the bitmaps, nothing per block.
 */
private[spark] final class ShuffleMergeSummary(
    val shuffleId: Int,
    val partitionBytes: Array[Long],
    val mapsMerged: Array[Roaring64NavigableMap],
    val chunks: Long,
    val ownersAsked: Int,
    val ownersAnswered: Int,
    shuffleBytes: Long) {

  def mergedBytes: Long = partitionBytes.sum

  /** Bytes this summary keeps on the driver: the arrays and the bitmaps as serialized. */
  def stateBytes: Long = 12L * partitionBytes.length +
    mapsMerged.iterator.filter(_ != null).map(_.serializedSizeInBytes()).sum

  def toMap: Map[String, Any] = Map(
    "merged_bytes" -> mergedBytes,
    "shuffle_bytes" -> shuffleBytes,
    "merged_ratio" -> (if (shuffleBytes == 0) 0.0 else mergedBytes.toDouble / shuffleBytes),
    "partitions_merged" -> partitionBytes.count(_ > 0),
    "chunks" -> chunks,
    "owners_asked" -> ownersAsked,
    "owners_answered" -> ownersAnswered,
    "driver_state_bytes" -> stateBytes)
}

/**
 * The driver's summaries of what mode=push merged (Magnet's finalization, without sealing: the
 * owners keep merging what pushers still send until reduce tasks ask for layouts). When a map
 * stage of a registered shuffle completes, its owners ([[OwnerTable]], in any version)
 * are asked, on this class's own thread so that no task and no listener waits, what they merged
 * so far (`ask`, saying that the map stage ended: their pushers then drop what they still have
 * queued of it, which would arrive after the reduce tasks sealed its partitions and cross the
 * network twice); an owner that does not answer within `timeout` counts as having merged
 * nothing. A rerun map stage replaces the summary. `published` hears of each new one.
 * Summaries outlive their shuffles, which Spark's cleaner removes as soon as their RDDs are
 * collected, often before anyone asks: the newest [[MergeSummaries.Kept]] are kept.
 *
 * @param shuffleBytes a shuffle's bytes, from its map outputs
 */
private[spark] final class MergeSummaries(
    ask: (BlockManagerId, Int, Boolean) => Future[Seq[MergedPartition]],
    timeout: FiniteDuration,
    shuffleBytes: Int => Long,
    published: ShuffleMergeSummary => Unit)
    extends SparkListener
    with Logging {

  private[this] val owners = new ConcurrentHashMap[Int, () => Option[Seq[OwnerTable]]]
  private[this] val summaries = mutable.TreeMap.empty[Int, ShuffleMergeSummary]
  private[this] val thread = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-merge-summaries")

  /** A push shuffle whose map stages end in a summary; `tables` are its owner table's versions. */
  def register(shuffleId: Int, tables: () => Option[Seq[OwnerTable]]): Unit =
    owners.put(shuffleId, tables)

  /** The shuffle is gone: no more summaries of it (the last is kept, see the class). */
  def remove(shuffleId: Int): Unit = owners.remove(shuffleId)

  def summary(shuffleId: Int): Option[ShuffleMergeSummary] = synchronized(summaries.get(shuffleId))

  def all: Map[Int, ShuffleMergeSummary] = synchronized(summaries.toMap)

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    val stage = completed.stageInfo
    for {
      shuffleId <- stage.shuffleDepId
      if stage.failureReason.isEmpty
      tables <- Option(owners.get(shuffleId)).flatMap(_())
    } thread.execute { () =>
      try collect(shuffleId, tables)
      catch {
        case NonFatal(e) => logWarning(s"No merge summary of shuffle $shuffleId", e)
      }
    }
  }

  /** The owner table's versions of each registered shuffle. */
  def registered: Map[Int, Seq[OwnerTable]] =
    owners.asScala.toMap.flatMap { case (id, tables) => tables().map(id.intValue -> _) }

  /** Asks every owner in any of `tables` at once and keeps what they answered. */
  def collect(shuffleId: Int, tables: Seq[OwnerTable]): ShuffleMergeSummary = {
    val summary = gather(shuffleId, tables, mapStageEnded = true)
    // A shuffle removed while its owners answered keeps no summary.
    if (owners.containsKey(shuffleId)) {
      synchronized {
        summaries(shuffleId) = summary
        // Shuffle ids grow with time: the smallest is the oldest.
        while (summaries.size > MergeSummaries.Kept) summaries -= summaries.firstKey
      }
      published(summary)
    }
    summary
  }

  /**
   * What the owners in any of `tables` (those not lost) merged of `shuffleId` so far, asked
   * all at once; kept nowhere. `mapStageEnded`: asked because a map stage of it ended.
   */
  def gather(
      shuffleId: Int,
      tables: Seq[OwnerTable],
      mapStageEnded: Boolean = false): ShuffleMergeSummary = {
    val table = tables.head
    val asked = OwnerTable.ranges(tables, 0, table.numPartitions).map(_._1).distinct
    val answers =
      Ask.all(asked.map(owner => owner -> ask(owner, shuffleId, mapStageEnded)), timeout).map {
        case (_, answer) => answer.toOption
      }
    val bytes = new Array[Long](table.numPartitions)
    val maps = new Array[Roaring64NavigableMap](table.numPartitions)
    var chunks = 0L
    answers.flatten.flatten.foreach { p =>
      if (p.partition >= 0 && p.partition < bytes.length) {
        bytes(p.partition) += p.bytes
        if (maps(p.partition) == null) maps(p.partition) = p.mapIds
        else maps(p.partition).or(p.mapIds)
        chunks += p.chunks
      }
    }
    new ShuffleMergeSummary(
      shuffleId,
      bytes,
      maps,
      chunks,
      asked.size,
      answers.count(_.isDefined),
      shuffleBytes(shuffleId))
  }

  def stop(): Unit = {
    thread.shutdownNow()
    thread.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[spark] object MergeSummaries {
  val Kept = 32
}
