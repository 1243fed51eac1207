package org.apache.spark.shuffle.adaptive.push

import java.util.concurrent.RejectedExecutionException

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{PUSH_CHUNK_SIZE, PUSH_MAX_BLOCK_SIZE, PUSH_NICENESS, PUSH_QUEUE_SIZE, PUSH_SPILL_TO_PEERS, PushMaxBlockSize, STORE_MAX_SIZE}
import org.apache.spark.util.RpcUtils
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.push.background.BackgroundPriority
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.metrics.ExecutorShuffleMetrics
import org.apache.spark.shuffle.adaptive.push.protocol.{OwnerTable, OwnerTableUpdates}
import org.apache.spark.shuffle.adaptive.push.map.{PushQueue, Pusher}
import org.apache.spark.shuffle.adaptive.push.owner.{ChunkHandOff, MergeStore, PushMessages}
import org.apache.spark.shuffle.adaptive.push.reduce.MergedReadPart
import org.apache.spark.shuffle.adaptive.transport.{MapOutputListener, RemoteMemory}

/**
 * This executor's end of mode=push: its [[MergeStore]] of the partitions it owns, the owner
 * tables the driver sends ([[OwnerTableUpdates]]), what it answers and takes of the plugin's
 * messages ([[PushMessages]], from the start: any executor may be an owner), its pusher, and its hand-off of chunks to peers once its store is full ([[ChunkHandOff]], unless
 * `push.spillToPeers` is off or push.reliability is replicated). Peers read its chunks one-sided where `remoteMemory` lets them
 * (UCX). Its store's usage and its push queue go to `metrics` (this
 * executor's metrics source) as they change.
 *
 * @param replicated push.reliability=replicated: every block is held by an executor other than
 *                   its map's
 */
private[spark] final class PushExecutor(
    conf: SparkConf,
    metrics: => Option[ExecutorShuffleMetrics],
    remoteMemory: () => Option[RemoteMemory],
    flow: => FlowSettings,
    val replicated: Boolean)
    extends Logging {

  val chunkSize: Long = conf.get(PUSH_CHUNK_SIZE)

  // How long a question to another executor may take: a layout, what it sealed, a replica's push.
  private[this] val askTimeout = RpcUtils.askRpcTimeout(conf).duration

  // Merged files go where Spark keeps this executor's other temporary blocks (its local dirs,
  // removed with the executor); SparkEnv is complete by the time a chunk moves there.
  private[this] val disk = new MergeStore.Disk(
    () => SparkEnv.get.blockManager.diskBlockManager.createTempLocalBlock()._2,
    SparkTransportConf.fromSparkConf(conf, "shuffle"))

  // Of the pusher, the merging thread and the hand-off thread.
  private[this] val niceness = conf.get(PUSH_NICENESS)

  // Made by the first run pushed here. Replicated, none: a run is merged as it arrives, as its
  // pusher's map task waits for it and the summary the driver asks for once the map stage ended
  // must name it.
  private[this] lazy val mergeThread = BackgroundPriority.singleThread(
    "shuffle-merge",
    niceness,
    () => logWarning("Could not lower the merging thread's priority: it merges at the tasks'"))
  @volatile private[this] var merging = false

  val merges =
    new MergeStore(
      new MemoryBound(MemoryBound.capacity(conf, STORE_MAX_SIZE)),
      chunkSize,
      disk,
      remoteMemory,
      _ => changed(),
      if (replicated) None
      else
        Some { run =>
          if (stopped) throw new RejectedExecutionException("stopping")
          merging = true
          mergeThread.execute(run)
        })

  // Made by the first change past the mark: SparkEnv is complete by then.
  private[this] lazy val handOff = ChunkHandOff(SparkEnv.get, merges, flow, niceness)
  // Replicated, a chunk handed to a peer would be lost with the peer together with the only
  // other copy of its blocks from that peer's map outputs: their files.
  private[this] val spillToPeers = conf.get(PUSH_SPILL_TO_PEERS) && !replicated
  @volatile private[this] var handingOff = false
  @volatile private[this] var stopped = false

  private def changed(): Unit = if (!stopped) {
    if (spillToPeers && merges.memory.used > merges.policy.handOffMark) {
      handingOff = true
      handOff.wake()
    }
    report()
  }

  /** The owner tables the driver placed by size after the map tasks' own. */
  val tables = new OwnerTableUpdates

  val messages = new PushMessages(merges, tables, mapStageEnded)

  private[this] lazy val pusher = new Pusher(
    merges,
    tables,
    new PushQueue(conf.get(PUSH_QUEUE_SIZE).getOrElse(merges.memory.capacity)),
    chunkSize,
    Some(askTimeout).filter(_ => replicated),
    if (replicated) 0 else niceness,
    flow,
    askTimeout,
    () => report())
  @volatile private[this] var pushing = false

  private def mapStageEnded(shuffleId: Int): Unit = if (pushing) pusher.mapStageEnded(shuffleId)

  private[this] val maxBlockSize = conf.get(PUSH_MAX_BLOCK_SIZE)

  /**
   * What becomes of the output of a map task of a shuffle whose partitions `owners` merge (unless the
   * driver has sent a newer table), and whose reduce tasks run at them if `reducedAtOwners`.
   */
  def listener(owners: OwnerTable, reducedAtOwners: Boolean): MapOutputListener = {
    pushing = true
    pusher.forShuffle(
      owners,
      if (replicated) Long.MaxValue
      else
        maxBlockSize.getOrElse(
          if (reducedAtOwners) PushMaxBlockSize.AtOwners else PushMaxBlockSize.Anywhere))
  }

  private def report(): Unit = if (pushing) {
    val memory = merges.memory
    metrics.foreach(
      _.storeUsage(
        memory.capacity,
        memory.used,
        merges.directBytes,
        memory.highWater,
        pusher.queue.bytesQueued,
        pusher.queue.bytesHighWater,
        pusher.queue.bytesRefused,
        merges.intake.bytesLate,
        merges.policy.bytesMovedToDisk,
        merges.policy.bytesReleasedAfterRead,
        merges.handOffs.bytesHandedOff,
        merges.handOffs.bytesHostedForPeers))
  }

  /** mode=push's part of the read plans of a shuffle whose partitions `owners` merged. */
  def readPart(owners: Option[Seq[OwnerTable]], numMaps: Int, oneSided: Boolean): MergedReadPart =
    new MergedReadPart(
      owners,
      numMaps,
      merges,
      math.max(chunkSize, flow.bulkRequestSize),
      replicated,
      oneSided,
      askTimeout)

  def removeShuffle(shuffleId: Int): Unit = {
    merges.removeShuffle(shuffleId)
    tables.remove(shuffleId)
    if (pushing) pusher.removeShuffle(shuffleId)
  }

  // Clearing the store changes it: nothing is handed off or reported once stopping began.
  def stop(): Unit = {
    stopped = true
    if (pushing) pusher.stop()
    if (merging) mergeThread.shutdownNow()
    if (handingOff) handOff.stop()
    merges.clear()
  }
}
