package org.apache.spark.shuffle.adaptive.push.background

import java.util.concurrent.LinkedBlockingQueue

import scala.collection.mutable
import scala.concurrent.{ExecutionContext, Future}
import scala.util.{Failure, Success, Try}

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.{Clock, SystemClock}
import org.apache.spark.shuffle.adaptive.flow.{ElasticLimit, ExecutorOrder, FlowLimits, FlowSettings, InFlightLedger, PeerQueue, PeerTraffic, SendRule, SizedBlock}
import org.apache.spark.shuffle.adaptive.transport.BlockUploads

/**
 * Sends runs of blocks to other executors' stores (a push, see protocol.RunUpload, or an owner's
 * chunks handed off to a peer) under the rules every
 * sender of the plugin follows: batches of about one `increment`, Spark's request and
 * per-address caps, peers in circular order starting after this executor (`self`), and at most
 * `elastic.current` bytes in flight. That limit is elastic as a reduce task's: the sender blocks for
 * uploads to finish as a reduce task blocks for blocks to arrive, and how long it waits shrinks
 * or grows it. The executor-wide [[PeerTraffic]] sees the bytes in flight to each peer, so
 * fetchers choosing sources see them too. Runs on the calling thread.
 */
private[push] final class RunSender(
    upload: (BlockManagerId, BlockId, ManagedBuffer) => Future[Unit],
    limits: FlowLimits,
    increment: Long,
    elastic: ElasticLimit,
    traffic: PeerTraffic,
    self: String,
    clock: Clock = new SystemClock)
    extends Logging {

  private[this] val done = new LinkedBlockingQueue[(BlockManagerId, BlockId, Long, Try[Unit])]
  private[this] val ledger = new InFlightLedger(traffic, elastic.current)

  /** Blocks of each batch not yet done with, by batch; a batch is one request to the ledger. */
  private[this] val openBatches = mutable.HashMap.empty[Int, Int]
  private[this] val batchOf = mutable.HashMap.empty[BlockId, Int]

  /**
   * Sends every item to its peer and returns those that arrived; the others (a failed upload,
   * a full store) stay in the map output's file only.
   */
  def send(
      peers: Seq[(BlockManagerId, Seq[(BlockId, Long)])],
      data: BlockId => ManagedBuffer): Set[BlockId] = {
    val inOrder = ExecutorOrder
      .successors(self, peers.map(_._1.executorId).distinct)
      .flatMap(id => peers.filter(_._1.executorId == id))
    val queues = inOrder.map { case (address, blocks) =>
      new PeerQueue(address, blocks.map { case (id, size) => RunSender.Run(id, size) })
    }
    val arrived = Set.newBuilder[BlockId]
    var nextBatch = 0
    // A sender interrupted mid-way leaves no load on its peers in the executor's traffic.
    try {
      while (queues.exists(_.nonEmpty) || openBatches.nonEmpty) {
        var sent = true
        while (sent) {
          sent = false
          queues
            .find { q =>
              q.nonEmpty && SendRule.blocksAllowed(limits, ledger, q.address) > 0 &&
              SendRule.fits(
                limits,
                ledger,
                q.peek(increment, SendRule.blocksAllowed(limits, ledger, q.address)))
            }
            .foreach { q =>
              val batch = q.take(increment, SendRule.blocksAllowed(limits, ledger, q.address))
              openBatches(nextBatch) = batch.blocks.size
              ledger.sent(batch.address, batch.blocks.size, batch.size)
              batch.blocks.foreach { ref =>
                val id = ref.blockId
                batchOf(id) = nextBatch
                start(batch.address, id, ref.size, data)
              }
              nextBatch += 1
              sent = true
            }
        }
        val waitStart = clock.nanoTime()
        val (address, id, size, result) = done.take()
        elastic.observeWait((clock.nanoTime() - waitStart) / 1e6)
        finish(address, id, size)
        result match {
          case Success(_) => arrived += id
          case Failure(e: BlockUploads.RefusedUpload) =>
            logDebug(s"${e.getMessage}; it stays where it is")
          case Failure(e) =>
            logWarning(s"Could not send $id to $address; it stays where it is", e)
        }
      }
    } finally ledger.release()
    arrived.result()
  }

  private def start(
      address: BlockManagerId,
      id: BlockId,
      size: Long,
      data: BlockId => ManagedBuffer): Unit = {
    val sending = Try(upload(address, id, data(id))) match {
      case Success(future) => future
      case Failure(e) => Future.failed(e)
    }
    sending.onComplete(r => done.put((address, id, size, r)))(ExecutionContext.parasitic)
  }

  private def finish(address: BlockManagerId, id: BlockId, size: Long): Unit = {
    val batch = batchOf.remove(id).get
    openBatches(batch) -= 1
    val last = openBatches(batch) == 0
    if (last) openBatches -= batch
    ledger.returned(address, size, last)
  }
}

private[push] object RunSender {

  private final case class Run(blockId: BlockId, size: Long) extends SizedBlock

  /**
   * A sender of this executor's uploads through Spark's block transfer service, under the
   * executor's flow settings (one is made per map output: its elastic limit starts afresh).
   */
  def apply(env: SparkEnv, settings: FlowSettings): RunSender = {
    def upload(peer: BlockManagerId, id: BlockId, data: ManagedBuffer) =
      BlockUploads.upload(env, peer.host, peer.port, id, data)
    new RunSender(
      upload,
      settings,
      settings.bulkRequestSize,
      settings.elasticLimit(),
      PeerTraffic.shared(settings.waitWindow),
      env.executorId)
  }
}
