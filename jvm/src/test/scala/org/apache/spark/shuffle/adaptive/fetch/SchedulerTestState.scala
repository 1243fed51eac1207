package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable

import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowState, InFlightLedger, PeerTraffic}

/**
 * A reduce task's outstanding requests as the schedulers see them, driven by hand: [[send]]
 * what a scheduler returned, [[consume]] blocks. Its accounting is the fetcher's
 * [[InFlightLedger]], which loads `shared` (the executor's traffic) as the fetcher's does.
 */
private final class SchedulerTestState(var limit: Long, shared: PeerTraffic) extends FlowState {
  private val open = mutable.LinkedHashMap.empty[ShuffleBlockId, (BlockManagerId, Long)]
  private val requestBlocks = mutable.ArrayBuffer.empty[mutable.Set[ShuffleBlockId]]
  private val ledger =
    new InFlightLedger(Option(shared).getOrElse(new PeerTraffic(window = 1)), limit)

  override def bytesInFlight: Long = ledger.bytesInFlight
  override def requestsInFlight: Int = ledger.requestsInFlight
  override def blocksInFlightTo(address: BlockManagerId): Int = ledger.blocksInFlightTo(address)

  def send(request: BlockBatch[FetchItem]): Unit = {
    request.blocks.foreach { b =>
      open(b.blockId.asInstanceOf[ShuffleBlockId]) = (request.address, b.size)
    }
    requestBlocks += mutable.Set.from(request.blocks.map(_.blockId.asInstanceOf[ShuffleBlockId]))
    ledger.sent(request.address, request.blocks.size, request.size)
  }

  def consume(id: ShuffleBlockId): Unit = {
    val (address, size) = open.remove(id).get
    val request = requestBlocks.find(_.contains(id)).get
    request -= id
    ledger.returned(address, size, lastOfRequest = request.isEmpty)
  }

  /** Consumes every block of the oldest request still open. */
  def consumeOldest(): Unit =
    requestBlocks.find(_.nonEmpty).foreach(_.toList.foreach(consume))

  def openBlocks: Seq[ShuffleBlockId] = open.keys.toSeq
}

private object SchedulerTestState {
  def refs(shuffleId: Int, firstMap: Int, sizes: Seq[Long]): IndexedSeq[BlockRef] =
    sizes.zipWithIndex.map { case (s, i) =>
      BlockRef(ShuffleBlockId(shuffleId, firstMap + i, 0), s, firstMap + i)
    }.toIndexedSeq

  /** Asks `scheduler` for requests until it has none to send now. */
  def drain(scheduler: FetchScheduler, state: SchedulerTestState): Seq[BlockBatch[FetchItem]] = {
    val out = mutable.ArrayBuffer.empty[BlockBatch[FetchItem]]
    var next = scheduler.next(state)
    while (next.isDefined) {
      state.send(next.get)
      out += next.get
      next = scheduler.next(state)
    }
    out.toSeq
  }
}
