package org.apache.spark.shuffle.adaptive.push.map

import java.io.File
import java.util.concurrent.{ConcurrentHashMap, TimeoutException, TimeUnit}

import scala.concurrent.{Await, Future, Promise}
import scala.concurrent.duration.FiniteDuration
import scala.util.{Failure, Success}
import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.flow.{ExecutorOrder, FlowSettings}
import org.apache.spark.shuffle.adaptive.push.background.{BackgroundPriority, RunSender}
import org.apache.spark.shuffle.adaptive.protocol.Ask
import org.apache.spark.shuffle.adaptive.push.protocol.{OwnerTable, OwnerTableUpdates, PushPayloads, RunUpload, SealedRequest}
import org.apache.spark.shuffle.adaptive.push.owner.MergeStore
import org.apache.spark.shuffle.adaptive.transport.MapOutputListener

/**
 * Shuffle-on-write (mode=push; iShuffle, section 3.2), one per executor. A committed map output
 * is queued; one background thread, the pusher, sends queued map outputs in order while later map
 * tasks run: to each partition's owner ([[OwnerTable]], from the shuffle's handle, or the newest the driver sent since,
 * [[OwnerTableUpdates]]) the run of the
 * data file its partitions span, in pieces of about one chunk, this executor's own partitions
 * straight into its [[MergeStore]]. Blocks larger than `maxBlockSize` are not pushed: merging
 * pays for small blocks, whose reads cost more per request than per byte, and a large block read
 * from its file is already one large read. The owners merge what they can hold; the rest stays in the
 * map output's file, which is kept in every case and is where reduce tasks read whatever was not
 * merged. Under push.reliability=replicated (`replication`, how long a map task waits for its
 * pushes), every non-empty block is pushed, this executor's own partitions to their replica
 * ([[OwnerTable.replicaOf]]), and the map task returns once they were.
 *
 * What a map task pays: cutting its output into runs and queueing them. No driver message, no
 * disk read, no network wait (but for its pushes, replicated).
 * What the executor pays: one thread sending its map outputs' files (file to socket, from the
 * page cache, as they were just written) under the flow rules every sender follows
 * ([[RunSender]]), at a priority `niceness` below the tasks' ([[BackgroundPriority]]): it takes
 * the CPU they leave idle and falls behind when they need it. Runs the [[PushQueue]] has no
 * room for stay in their files. What is still queued when the driver says that the map stage
 * ended is pushed all the same, as a partition takes runs until its own reduce task seals it;
 * but the pusher first asks each owner which of the partitions it would send there are sealed
 * ([[SealedRequest]], one small question per owner and map output, the answers kept), and
 * leaves those in their files: a run pushed to a sealed partition would cross the network to be
 * dropped, and again from its file.
 *
 * @param askTimeout how long the pusher waits for owners to say what they sealed (one deadline
 *                   for all of them); an owner that does not answer is pushed to regardless
 */
private[push] final class Pusher(
    merges: MergeStore,
    tables: OwnerTableUpdates,
    val queue: PushQueue,
    chunkSize: Long,
    replication: Option[FiniteDuration],
    niceness: Int,
    flow: FlowSettings,
    askTimeout: FiniteDuration,
    changed: () => Unit)
    extends Logging {

  private[this] val pusher = BackgroundPriority.singleThread(
    "shuffle-push",
    niceness,
    () =>
      logWarning("Could not lower the pusher thread's priority: it pushes at the tasks' priority"))

  // Per shuffle whose map stage the driver said ended, the partitions owners said are sealed
  // (a seal is for good, so answers are kept, and only what is not known sealed is asked again).
  private[this] val sealedKnown = new ConcurrentHashMap[Int, java.util.BitSet]

  /** A map stage of `shuffleId` ended: its reduce tasks may seal its partitions from now on. */
  def mapStageEnded(shuffleId: Int): Unit = sealedKnown.putIfAbsent(shuffleId, new java.util.BitSet)

  def removeShuffle(shuffleId: Int): Unit = sealedKnown.remove(shuffleId)

  /**
   * What becomes of the output of one map task of a shuffle whose partitions `carried` merge, or those of
   * a newer table the driver sent by the time the task commits; its blocks larger than
   * `maxBlockSize` stay in its file.
   */
  def forShuffle(carried: OwnerTable, maxBlockSize: Long): MapOutputListener =
    new MapOutputListener {
      override def committed(
          shuffleId: Int,
          mapId: Long,
          dataFile: File,
          offsets: Array[Long]): Unit = {
        val owners = tables.newestOf(shuffleId, carried)
        val self = SparkEnv.get.blockManager.blockManagerId
        val byOwner =
          Pusher.targets(owners, self, replication.isDefined).map { case (target, ranges) =>
            target -> ranges.flatMap { case (start, end) =>
              Pusher.pieces(offsets, start, end, chunkSize, maxBlockSize)
            }
          }
        val pieces = Pusher.interleaved(self.executorId, byOwner)
        val sizes = pieces.map { case (_, (start, end)) => offsets(end) - offsets(start) }
        val pushing = pieces.take(queue.offer(sizes))
        changed()
        if (pushing.isEmpty) return
        val bytes = sizes.take(pushing.size).sum
        val pushed = Promise[Unit]()
        pusher.execute { () =>
          try push(shuffleId, mapId, dataFile, offsets, unsealed(shuffleId, offsets, pushing))
          catch {
            case NonFatal(e) =>
              logWarning(
                s"Could not push map output $mapId of shuffle $shuffleId; its file serves it",
                e)
          } finally {
            queue.done(bytes)
            changed()
            pushed.success(())
          }
        }
        // Replicated: the MapStatus leaves once the copies are at their holders, so that the map
        // stage ends with every map output held twice.
        replication.foreach { timeout =>
          try Await.ready(pushed.future, timeout)
          catch {
            case _: TimeoutException =>
              logWarning(
                s"Map output $mapId of shuffle $shuffleId was not pushed within $timeout; " +
                  "until it is, losing this executor reruns its map task")
          }
        }
      }
      override def removed(shuffleId: Int): Unit = ()
      override def stop(): Unit = ()
    }

  /**
   * `pieces` less the partitions their owners sealed, once the shuffle's map stage ended (cut
   * around them; runs left with no bytes dropped).
   */
  private def unsealed(
      shuffleId: Int,
      offsets: Array[Long],
      pieces: Seq[(BlockManagerId, (Int, Int))]): Seq[(BlockManagerId, (Int, Int))] =
    Option(sealedKnown.get(shuffleId)).fold(pieces) { known =>
      val env = SparkEnv.get
      val self = env.blockManager.blockManagerId
      val asked = pieces.groupMap(_._1)(_._2).toSeq.flatMap { case (owner, ranges) =>
        val (start, end) = (ranges.map(_._1).min, ranges.map(_._2).max)
        val unknown = known.synchronized(known.nextClearBit(start) < end)
        if (!unknown) None
        else if (owner == self)
          Some(owner -> Future.successful(merges.serving.sealedOf(shuffleId, start, end)))
        else
          Some(
            owner -> Ask(env, owner, SealedRequest(shuffleId, start, end))(
              PushPayloads.decodeSealed))
      }
      Ask.all(asked, askTimeout).foreach {
        case (_, Success(sealedThere)) => known.synchronized(known.or(sealedThere))
        case (owner, Failure(e)) =>
          logDebug(s"$owner did not say what it sealed of shuffle $shuffleId; pushing to it", e)
      }
      val sealedNow = known.synchronized(known.clone().asInstanceOf[java.util.BitSet])
      pieces.flatMap { case (owner, (start, end)) =>
        Pusher.openRanges(start, end, sealedNow).collect {
          case (first, last) if offsets(last) > offsets(first) => owner -> (first, last)
        }
      }
    }

  private def push(
      shuffleId: Int,
      mapId: Long,
      dataFile: File,
      offsets: Array[Long],
      pieces: Seq[(BlockManagerId, (Int, Int))]): Unit = {
    val env = SparkEnv.get
    val self = env.blockManager.blockManagerId
    val (local, remote) = pieces.partition(_._1 == self)
    local.foreach { case (_, (start, end)) =>
      merges.intake.appendFromFile(shuffleId, mapId, start, end, dataFile, offsets)
    }
    if (remote.nonEmpty) {
      val runs = remote.map { case (owner, (start, end)) =>
        owner -> ShuffleBlockBatchId(shuffleId, mapId, start, end)
      }
      val byId: Map[BlockId, ShuffleBlockBatchId] = runs.map { case (_, run) => run -> run }.toMap
      val toSend = runs.groupMap(_._1) { case (_, run) =>
        (run: BlockId) -> (offsets(run.endReduceId) - offsets(run.startReduceId))
      }
      // The sender takes the peers in its own (circular) order.
      RunSender(env, flow).send(toSend.toSeq, id => RunUpload.of(byId(id), dataFile, offsets))
    }
  }

  def stop(): Unit = {
    pusher.shutdownNow()
    pusher.awaitTermination(10, TimeUnit.SECONDS)
  }
}

private[push] object Pusher {

  /** The ranges of partitions `[start, end)` none of which is in `closed`, in order. */
  def openRanges(start: Int, end: Int, closed: java.util.BitSet): Seq[(Int, Int)] = {
    val ranges = Seq.newBuilder[(Int, Int)]
    var first = closed.nextClearBit(start)
    while (first < end) {
      val last = math.min(end, closed.nextSetBit(first) match { case -1 => end; case n => n })
      ranges += ((first, last))
      first = closed.nextClearBit(last)
    }
    ranges.result()
  }

  /**
   * Where a map output of executor `self` sends the blocks of each owner's partitions (ranges
   * `[start, end)` in partition order): to their owner; where `replicated`, `self`'s own
   * partitions to its replica in `table` instead, so that every block is held by an executor
   * other than the one whose file holds it.
   */
  def targets(
      table: OwnerTable,
      self: BlockManagerId,
      replicated: Boolean): Seq[(BlockManagerId, Seq[(Int, Int)])] = {
    val ranges = table.ranges(0, table.numPartitions).map { case (owner, start, end) =>
      val target =
        if (replicated && owner == self) table.replicaOf(owner).getOrElse(owner) else owner
      target -> (start, end)
    }
    ranges.map(_._1).distinct.map(t => t -> ranges.collect { case (`t`, range) => range })
  }

  /**
   * The runs for each owner, one owner's at a time in turn, starting with the owner that follows
   * `self` in [[ExecutorOrder]]: when the queue cannot take a map output's every run, what it
   * takes is spread over the owners, and executors start on different owners.
   */
  def interleaved[T](
      self: String,
      byOwner: Seq[(BlockManagerId, Seq[T])]): Seq[(BlockManagerId, T)] = {
    val order = ExecutorOrder.successors(self, byOwner.map(_._1.executorId))
    val queues = order.flatMap(id => byOwner.find(_._1.executorId == id)).map { case (o, runs) =>
      runs.iterator.map((o, _))
    }
    val out = Seq.newBuilder[(BlockManagerId, T)]
    var left = queues.filter(_.hasNext)
    while (left.nonEmpty) {
      left.foreach(q => out += q.next())
      left = left.filter(_.hasNext)
    }
    out.result()
  }

  /**
   * Partitions `[start, end)` of a map output with index `offsets`, cut into runs `(first, end)`
   * of about `size` bytes (a larger block a run of its own), without leading or trailing empty
   * blocks and without blocks larger than `maxBlock`, which are read from their file; empty runs
   * and runs of more bytes than one buffer holds are left out.
   */
  def pieces(
      offsets: Array[Long],
      start: Int,
      end: Int,
      size: Long,
      maxBlock: Long): Seq[(Int, Int)] = {
    def length(i: Int) = offsets(i + 1) - offsets(i)
    val runs = Seq.newBuilder[(Int, Int)]
    var first = start
    while (first < end) {
      while (first < end && (length(first) == 0 || length(first) > maxBlock)) first += 1
      if (first < end) {
        var last = first + 1
        while (last < end && length(last) <= maxBlock && offsets(last + 1) - offsets(first) <= size)
          last += 1
        while (offsets(last) == offsets(last - 1)) last -= 1
        if (offsets(last) - offsets(first) <= Int.MaxValue - RunUpload.headerLength(last - first))
          runs += ((first, last))
        first = last
      }
    }
    runs.result()
  }
}
