package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable

import org.apache.spark.util.ManualClock

import AdaptiveFetchTestKit.exec
import SchedulerTestState.refs
import org.apache.spark.shuffle.adaptive.flow.{FlowSettings, PeerTraffic}

/**
 * One reduce task fetching over links of fixed rates, in simulated milliseconds. Each source
 * sends the blocks asked of it in the order asked, `rate` bytes per ms; the task takes an arrived
 * block (which leaves its in-flight bytes, as in the fetcher), consumes it at `consumeRate` bytes
 * per ms, and waits when none has arrived. Between milliseconds the scheduler sends what it
 * will. The executor's [[PeerTraffic]] is fed as the fetcher feeds it: pending bytes, requests
 * started and ended, bytes delivered, waits by source.
 *
 * @param links (executor id, bytes per ms, block sizes) per source
 */
private final class LinkSimulation(
    settings: FlowSettings,
    links: Seq[(String, Long, Seq[Long])],
    consumeRate: Long,
    val shared: PeerTraffic = new PeerTraffic(16),
    val clock: ManualClock = new ManualClock(),
    self: String = "0") {

  private val state = new SchedulerTestState(settings.maxBytesInFlight, shared)
  private val rates = links.map { case (id, rate, _) => id -> rate }.toMap
  private val scheduler = FetchScheduler(
    settings,
    exec(self),
    links.zipWithIndex.map { case ((id, _, sizes), i) => exec(id) -> refs(1, i * 1000, sizes) },
    shared,
    clock)
  links.foreach { case (id, _, sizes) => shared.addPending(id, sizes.sum) }

  /** Blocks asked of each source and not yet delivered, each with whether it ends its request. */
  private val onLink = links.map(l => l._1 -> mutable.Queue.empty[(FetchItem, Boolean)]).toMap
  private val sentOfHead = mutable.Map.empty[String, Long].withDefaultValue(0L)
  private val arrived = mutable.Queue.empty[(FetchItem, String)]
  private val left = mutable.Map.from(links.map { case (id, _, sizes) => id -> sizes.sum })
  private var consuming = 0L
  private var waitingSince = -1L
  private var blocksLeft = links.map(_._3.size).sum

  /** Per source, the ms in which it still had bytes for the task but sent none. */
  val idleMs: mutable.Map[String, Int] = mutable.Map.empty[String, Int].withDefaultValue(0)

  /** The sources of the requests, in the order sent. */
  val requested: mutable.ArrayBuffer[String] = mutable.ArrayBuffer.empty[String]
  private val blocksAsked = mutable.Map.empty[String, mutable.ArrayBuffer[Long]]
  var maxRequestsInFlight = 0
  var maxBytesInFlight = 0L

  /** The sizes of the blocks asked of `id`, in the order asked. */
  def requestedBlocks(id: String): Seq[Long] = blocksAsked.get(id).fold(Seq.empty[Long])(_.toSeq)

  private def now: Long = clock.getTimeMillis()

  /** Runs to the last byte consumed; returns the ms it took. */
  def run(maxMs: Int = 1000000): Long = {
    while (blocksLeft > 0 || consuming > 0) {
      require(now < maxMs, s"still fetching after $maxMs ms")
      send()
      transmit()
      consume()
      clock.advance(1)
    }
    now
  }

  private def send(): Unit = {
    var request = scheduler.next(state)
    while (request.isDefined) {
      val batch = request.get
      val id = batch.address.executorId
      // The send rule and the per-address cap, which every order must obey.
      assert(
        state.bytesInFlight == 0 ||
          (state.requestsInFlight < settings.maxReqsInFlight &&
            state.bytesInFlight + batch.size <= state.limit),
        s"$batch sent with ${state.bytesInFlight} bytes in ${state.requestsInFlight} requests")
      assert(
        state.blocksInFlightTo(batch.address) + batch.blocks.size <=
          settings.maxBlocksInFlightPerAddress,
        s"$batch over the per-address cap")
      blocksAsked.getOrElseUpdate(id, mutable.ArrayBuffer.empty) ++= batch.blocks.map(_.size)
      shared.addPending(id, -batch.size)
      state.send(batch)
      shared.rate(id).requestStarted(nanos)
      requested += id
      batch.blocks.zipWithIndex.foreach { case (b, i) =>
        onLink(id) += b -> (i == batch.blocks.size - 1)
      }
      maxRequestsInFlight = math.max(maxRequestsInFlight, state.requestsInFlight)
      maxBytesInFlight = math.max(maxBytesInFlight, state.bytesInFlight)
      request = scheduler.next(state)
    }
  }

  private def nanos: Long = now * 1000000L

  private def transmit(): Unit = links.foreach { case (id, _, _) =>
    val queue = onLink(id)
    var budget = rates(id)
    if (left(id) > 0 && queue.isEmpty) idleMs(id) += 1
    while (budget > 0 && queue.nonEmpty) {
      val (block, last) = queue.head
      val sent = math.min(budget, block.size - sentOfHead(id))
      budget -= sent
      sentOfHead(id) += sent
      if (sentOfHead(id) == block.size) {
        queue.dequeue()
        sentOfHead(id) = 0
        left(id) -= block.size
        // Delivered at the end of this ms.
        shared.rate(id).delivered(nanos + 1000000L, block.size)
        if (last) shared.rate(id).requestEnded(nanos + 1000000L)
        arrived += block -> id
      }
    }
  }

  private def consume(): Unit = {
    var budget = consumeRate
    while (budget > 0 && (consuming > 0 || arrived.nonEmpty)) {
      if (consuming == 0) {
        val (block, id) = arrived.dequeue()
        state.consume(block.blockId.asInstanceOf[org.apache.spark.storage.ShuffleBlockId])
        shared.recordWait(id, if (waitingSince < 0) 0.0 else (now - waitingSince).toDouble)
        waitingSince = -1L
        consuming = block.size
        blocksLeft -= 1
        // The fetcher asks its scheduler again after each block it takes.
        send()
      }
      val used = math.min(budget, consuming)
      consuming -= used
      budget -= used
    }
    if (consuming == 0 && arrived.isEmpty && blocksLeft > 0 && waitingSince < 0) {
      waitingSince = now
    }
  }
}
