package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.spark.{MapOutputTrackerMaster, SparkContext}
import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.NioManagedBuffer
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.PUSH_PLACE_BY_SIZE_AFTER
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.{RpcUtils, ThreadUtils}
import org.apache.spark.shuffle.adaptive.push.protocol.{OwnerTable, PushPayloads, ReleaseRequest, SummaryRequest, TableUpload}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.protocol.Ask
import org.apache.spark.shuffle.adaptive.transport.BlockUploads

/**
 * The driver's end of mode=push: the summaries of what owners merged by each map stage's end
 * ([[MergeSummaries]]), the placement of owners by size ([[OwnerPlacement]], unless
 * `push.placeBySizeAfter` is 0), the release of chunks once a stage read them
 * ([[ReleaseAfterRead]]) or, under push.reliability=replicated, what becomes of a lost executor's
 * map outputs ([[LostMapOutputs]]): listeners with threads of their own.
 *
 * @param executors the block managers of the executors that run tasks (the driver's, in local
 *                  mode)
 * @param shuffleBytes a shuffle's bytes, from its map outputs
 * @param replicated push.reliability=replicated
 */
private[spark] final class PushDriver(
    sc: SparkContext,
    executors: () => Seq[BlockManagerId],
    shuffleBytes: Int => Long,
    published: ShuffleMergeSummary => Unit,
    replicated: Boolean)
    extends Logging {

  // Per push shuffle: what keeps a newer version of its owner table and sends it out.
  private[this] val publishers = new ConcurrentHashMap[Int, OwnerTable => Unit]

  private[this] val summaries = new MergeSummaries(
    (owner, id, ended) => Ask(sc.env, owner, SummaryRequest(id, ended))(PushPayloads.decodeSummary),
    RpcUtils.askRpcTimeout(sc.conf).duration,
    shuffleBytes,
    published)
  sc.addSparkListener(summaries)

  private[this] val releases =
    if (replicated) None
    else {
      val releasing = new ReleaseAfterRead(
        (owner, id) => Ask(sc.env, owner, ReleaseRequest(id))(_.getLong(0)),
        RpcUtils.askRpcTimeout(sc.conf).duration)
      sc.addSparkListener(releasing)
      Some(releasing)
    }

  private[this] val placement =
    Some(sc.conf.get(PUSH_PLACE_BY_SIZE_AFTER)).filter(_ > 0).map { fraction =>
      val placing = new OwnerPlacement(
        fraction,
        (id, partitions) =>
          SparkCompat.partitionBytes(id, partitions, PushDriver.PredictFromMaps).toArray,
        (id, table) => Option(publishers.get(id)).foreach(_(table)))
      sc.addSparkListener(placing)
      placing
    }

  private[this] val ready = new ReadyExecutors(executor => placement.foreach(_.joined(executor)))
  sc.addSparkListener(ready)

  /** push.reliability=replicated: the lost executors' map outputs not held elsewhere. */
  private[this] val lostOutputs =
    if (!replicated) None
    else {
      val lost = new LostMapOutputs(
        () => summaries.registered,
        () => executors().map(_.executorId).toSet,
        (id, tables) => {
          val summary = summaries.gather(id, tables)
          // Each owner that did not answer has its map outputs rerun: say so, with the count.
          if (summary.ownersAnswered < summary.ownersAsked) {
            logWarning(
              s"Shuffle $id: ${summary.ownersAsked - summary.ownersAnswered} of " +
                s"${summary.ownersAsked} live owners did not say what they merged; what only " +
                "they hold counts as lost")
          }
          summary.mapsMerged
        },
        sc.env.mapOutputTracker.asInstanceOf[MapOutputTrackerMaster])
      sc.addSparkListener(lost)
      Some(lost)
    }

  /**
   * A push shuffle: `tables` gives its owner table's versions, and `addVersion` keeps a newer
   * one in its handle (before it is sent to the executors).
   */
  def register(
      shuffleId: Int,
      numMaps: Int,
      numPartitions: Int,
      tables: () => Option[Seq[OwnerTable]],
      addVersion: OwnerTable => Unit): Unit = {
    publishers.put(shuffleId, table => { addVersion(table); send(shuffleId, table) })
    summaries.register(shuffleId, tables)
    releases.foreach(_.register(shuffleId, tables))
    placement.foreach(_.register(shuffleId, numMaps, numPartitions, () => tables().map(_.last)))
  }

  /** Shuffles of one `key` are read together, partition i by one task: one owner each. */
  def coPartitioned(shuffleId: Int, key: Long): Unit =
    placement.foreach(_.coPartitioned(shuffleId, key))

  def remove(shuffleId: Int): Unit = {
    publishers.remove(shuffleId)
    summaries.remove(shuffleId)
    releases.foreach(_.remove(shuffleId))
    placement.foreach(_.remove(shuffleId))
  }

  def report: Map[Int, ShuffleMergeSummary] = summaries.all

  /** push.reliability=replicated: executors lost and their map outputs kept and rerun. */
  def losses: Map[String, Long] = lostOutputs.fold(Map.empty[String, Long])(_.counts)

  /**
   * Uploads `table` to every executor that runs tasks ([[ReadyExecutors]]), whose pushers take
   * it from their next map output on.
   */
  private def send(shuffleId: Int, table: OwnerTable): Unit = {
    val data = PushPayloads.encodeTable(table)
    executors().filter(ready(_)).foreach { executor =>
      // An executor that does not get it pushes by the older table: its pushes are still read.
      def failed(e: Throwable) =
        logWarning(s"Could not send shuffle $shuffleId's owners to $executor", e)
      try
        BlockUploads
          .upload(
            sc.env,
            executor.host,
            executor.port,
            TableUpload(shuffleId, table.version).blockId,
            new NioManagedBuffer(data.duplicate()))
          .failed
          .foreach(failed)(ThreadUtils.sameThread)
      catch { case NonFatal(e) => failed(e) }
    }
  }

  def stop(): Unit = {
    summaries.stop()
    releases.foreach(_.stop())
    placement.foreach(_.stop())
    lostOutputs.foreach(_.stop())
  }
}

private[spark] object PushDriver {

  /**
   * Map outputs whose sizes predict a shuffle's partitions: enough for the shares of a skewed
   * shuffle, few enough that a placement of 10,000 partitions reads 10^7 sizes at most.
   */
  val PredictFromMaps = 1000
}
