package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable

import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, BlockRef, FlowState, PeerTraffic}
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}

/**
 * A reduce task's outstanding requests as the schedulers see them, driven by hand: [[send]]
 * what a scheduler returned, [[consume]] blocks; loads the shared executor state like the fetcher.
 */
private final class SchedulerTestState(var limit: Long, shared: PeerTraffic) extends FlowState {
  private val open = mutable.LinkedHashMap.empty[ShuffleBlockId, (BlockManagerId, Long)]
  private val requestBlocks = mutable.ArrayBuffer.empty[mutable.Set[ShuffleBlockId]]

  override def bytesInFlight: Long = open.valuesIterator.map(_._2).sum
  override def requestsInFlight: Int = requestBlocks.count(_.nonEmpty)
  override def blocksInFlightTo(address: BlockManagerId): Int = open.values.count(_._1 == address)

  def send(request: BlockBatch): Unit = {
    request.blocks.foreach { b =>
      open(b.blockId.asInstanceOf[ShuffleBlockId]) = (request.address, b.size)
    }
    requestBlocks += mutable.Set.from(request.blocks.map(_.blockId.asInstanceOf[ShuffleBlockId]))
    if (shared != null) shared.addInFlight(request.address.executorId, request.size)
  }

  def consume(id: ShuffleBlockId): Unit = {
    val (address, size) = open.remove(id).get
    requestBlocks.foreach(_ -= id)
    if (shared != null) shared.addInFlight(address.executorId, -size)
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
  def drain(scheduler: FetchScheduler, state: SchedulerTestState): Seq[BlockBatch] = {
    val out = mutable.ArrayBuffer.empty[BlockBatch]
    var next = scheduler.next(state)
    while (next.isDefined) {
      state.send(next.get)
      out += next.get
      next = scheduler.next(state)
    }
    out.toSeq
  }
}
