package org.apache.spark.shuffle.adaptive.push.owner

import java.util.concurrent.{RejectedExecutionException, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean

import scala.concurrent.Future
import scala.concurrent.duration._
import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.{Clock, SystemClock}
import org.apache.spark.shuffle.adaptive.push.protocol.{HandOffUpload, RoomRequest}
import org.apache.spark.shuffle.adaptive.flow.{ExecutorOrder, FlowSettings}
import org.apache.spark.shuffle.adaptive.push.background.{BackgroundPriority, RunSender}
import org.apache.spark.shuffle.adaptive.protocol.Ask

/**
 * Remote-memory spill of one owner's merged chunks (DSA w/ SMS; server-less, as the paper's
 * second meta-shuffle: receivers accept or refuse, no tracker of everyone's memory). Once the
 * store is past its hand-off mark, a round runs on this class's own thread:
 *  - ask `window` peers (in circular order from this executor, the next window after a full one)
 *    how much room they have for other owners' chunks, and take the one with the most;
 *  - hand it the hottest partitions' chunks that fit that room ([[PeerHandOffs.take]]),
 *    under the flow rules every sender follows (`send`); a chunk that arrived is read there from
 *    now on, one refused or lost stays here;
 *  - go on until at most half the memory is in use, or no peer has room.
 * A round that ends above the mark (every peer full) is not followed by another for `pause`,
 * so a full cluster is not asked again at every append; runs that do not fit meanwhile go to
 * disk as before.
 */
private[push] final class ChunkHandOff(
    merges: MergeStore,
    self: String,
    peers: () => Seq[BlockManagerId],
    room: BlockManagerId => Future[Long],
    send: (BlockManagerId, Seq[LeavingChunk]) => Set[LeavingChunk],
    niceness: Int,
    window: Int = 8,
    timeout: FiniteDuration = 10.seconds,
    pause: FiniteDuration = 1.second,
    clock: Clock = new SystemClock)
    extends Logging {

  // Below the tasks' priority, as the pusher and the merging thread are (it would otherwise
  // take the priority of whichever of them first found the store past its mark).
  private[this] val thread = BackgroundPriority.singleThread(
    "shuffle-merge-hand-off",
    niceness,
    () => logWarning("Could not lower the hand-off thread's priority: it runs at the tasks'"))
  private[this] val scheduled = new AtomicBoolean(false)
  @volatile private[this] var notBefore = 0L

  private def memory = merges.memory

  /**
   * Starts a round if the store is past its mark, unless one is under way, the last found no
   * room less than `pause` ago or it was stopped; answers whether it started one.
   */
  def wake(): Boolean = {
    val start = !thread.isShutdown && memory.used > merges.policy.handOffMark &&
      clock.nanoTime() >= notBefore && scheduled.compareAndSet(false, true)
    if (!start) return false
    try
      thread.execute { () =>
        try round()
        catch {
          case NonFatal(e) => logWarning("Could not hand merged chunks off to peers", e)
        } finally scheduled.set(false)
      }
    catch {
      // Stopped meanwhile (the executor stops, its store is cleared).
      case _: RejectedExecutionException =>
        scheduled.set(false)
        return false
    }
    true
  }

  /** One round, on the calling thread (see the class). */
  def round(): Unit = {
    val known = peers()
    val byId = known.map(p => p.executorId -> p).toMap
    val order = ExecutorOrder.successors(self, known.map(_.executorId)).iterator
    var candidates = Seq.empty[BlockManagerId]
    def target = memory.capacity / 2
    while (memory.used > target) {
      if (candidates.isEmpty) candidates = order.take(window).flatMap(byId.get).toSeq
      if (candidates.isEmpty) {
        if (memory.used > merges.policy.handOffMark) notBefore = clock.nanoTime() + pause.toNanos
        return
      }
      val rooms = Ask.all(candidates.map(p => p -> room(p)), timeout).map { case (p, answer) =>
        p -> answer.getOrElse(0L)
      }
      val (best, free) = rooms.maxBy(_._2)
      val leaving =
        if (free <= 0) Nil else merges.handOffs.take(math.min(free, memory.used - target))
      if (leaving.isEmpty) {
        // No room in this window, or no chunk that fits what room there is: the next window.
        candidates = Nil
      } else {
        val arrived = send(best, leaving)
        leaving.foreach(c =>
          if (arrived(c)) merges.handOffs.handedOff(c, best) else merges.handOffs.kept(c))
        if (arrived.size < leaving.size) candidates = candidates.filterNot(_ == best)
      }
    }
  }

  def stop(): Unit = {
    thread.shutdownNow()
    thread.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[push] object ChunkHandOff {

  /** Hand-offs of `merges`' chunks through Spark's block transfer service. */
  def apply(env: SparkEnv, merges: MergeStore, flow: FlowSettings, niceness: Int): ChunkHandOff = {
    val self = env.blockManager.blockManagerId
    new ChunkHandOff(
      merges,
      self.executorId,
      () => env.blockManager.master.getPeers(self),
      peer => Ask(env, peer, RoomRequest)(_.getLong),
      (peer, chunks) => {
        val byId: Map[BlockId, LeavingChunk] =
          chunks
            .map(c => (HandOffUpload(c.shuffleId, c.partition, c.chunkId).blockId: BlockId) -> c)
            .toMap
        RunSender(env, flow)
          .send(Seq(peer -> byId.toSeq.map { case (id, c) => id -> c.upload.size }), byId(_).upload)
          .map(byId)
      },
      niceness)
  }
}
