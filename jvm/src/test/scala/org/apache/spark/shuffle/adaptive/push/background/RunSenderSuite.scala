package org.apache.spark.shuffle.adaptive.push.background

import java.io.IOException
import java.util.concurrent.{Executors, TimeUnit}

import scala.collection.mutable
import scala.concurrent.{Future, Promise}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.util.ManualClock
import org.apache.spark.shuffle.adaptive.flow.{ElasticLimit, FlowLimits, PeerTraffic}

class RunSenderSuite extends AnyFunSuite {
  private val b = BlockManagerId("b", "host-b", 2)
  private val c = BlockManagerId("c", "host-c", 3)
  private def limits(requests: Int, perAddress: Int) = new FlowLimits {
    override val maxReqsInFlight = requests
    override val maxBlocksInFlightPerAddress = perAddress
  }

  /** A limit that stays at `max`. */
  private def fixed(increment: Long, max: Long) =
    new ElasticLimit(increment, max, false, 4, 0.5, 2, max)
  private def data(id: BlockId): ManagedBuffer = new NioManagedBuffer(
    java.nio.ByteBuffer.allocate(1))

  /** Completes each upload on another thread, recording what was in flight when it started. */
  private final class Peers(fail: Set[BlockId] = Set.empty) {
    private val pool = Executors.newSingleThreadExecutor()
    val started = mutable.ArrayBuffer.empty[(BlockManagerId, BlockId)]
    var inFlight = 0L
    var peak = 0L
    def upload(size: BlockId => Long)(
        peer: BlockManagerId,
        id: BlockId,
        buf: ManagedBuffer): Future[Unit] = synchronized {
      started += peer -> id
      inFlight += size(id)
      peak = math.max(peak, inFlight)
      val done = Promise[Unit]()
      pool.submit(new Runnable {
        override def run(): Unit = {
          Peers.this.synchronized(inFlight -= size(id))
          if (fail(id)) done.failure(new IOException(s"$id refused")) else done.success(())
        }
      })
      done.future
    }
    def stop(): Unit = { pool.shutdown(); pool.awaitTermination(10, TimeUnit.SECONDS) }
  }

  private def blocks(map: Long, sizes: Long*): Seq[(BlockId, Long)] =
    sizes.zipWithIndex.map { case (s, r) => (ShuffleBlockId(0, map, r): BlockId) -> s }

  test("every block is sent once, to its peer; failed uploads are not reported as arrived") {
    val toB = blocks(1, 10, 20, 30)
    val toC = blocks(2, 5, 5)
    val sizes: Map[BlockId, Long] = (toB ++ toC).toMap
    val peers = new Peers(fail = Set(ShuffleBlockId(0, 1, 1)))
    val traffic = new PeerTraffic(4)
    val sender =
      new RunSender(peers.upload(sizes), limits(5, 100), 15, fixed(15, 1000), traffic, "a")
    val arrived = sender.send(Seq(b -> toB, c -> toC), data)
    peers.stop()
    assert(peers.started.map(_._2).sortBy(_.name) === sizes.keys.toSeq.sortBy(_.name))
    assert(peers.started.forall { case (peer, id) =>
      (if (id.asInstanceOf[ShuffleBlockId].mapId == 1) b else c) == peer
    })
    assert(arrived === sizes.keySet - ShuffleBlockId(0, 1, 1))
    assert(traffic.inFlightTo(b.executorId) === 0 && traffic.inFlightTo(c.executorId) === 0)
  }

  test("bytes in flight stay under the limit unless one block alone exceeds it") {
    val toB = blocks(1, Seq.fill(20)(30L): _*)
    val sizes = toB.toMap
    val peers = new Peers()
    val sender = new RunSender(
      peers.upload(sizes),
      limits(100, 100),
      30,
      fixed(30, 100),
      new PeerTraffic(4),
      "a")
    assert(sender.send(Seq(b -> toB), data).size === 20)
    peers.stop()
    assert(peers.peak <= 100)
    val alone = new Peers()
    val big = blocks(2, 500, 500)
    new RunSender(
      alone.upload(big.toMap),
      limits(100, 100),
      30,
      fixed(30, 100),
      new PeerTraffic(4),
      "a")
      .send(Seq(c -> big), data)
    alone.stop()
    assert(alone.peak === 500)
  }

  test("the executor-wide traffic sees the bytes in flight to each peer, and none after") {
    val traffic = new PeerTraffic(4)
    val toB = blocks(1, 10, 10)
    val peers = new Peers()
    new RunSender(peers.upload(toB.toMap), limits(5, 5), 10, fixed(10, 100), traffic, "a")
      .send(Seq(b -> toB), data)
    peers.stop()
    assert(traffic.inFlightTo("b") === 0)
  }

  test("an upload that throws at once counts as not arrived, and the rest still go") {
    val toB = blocks(1, 10, 10)
    val sender = new RunSender(
      (_, id, _) =>
        if (id == ShuffleBlockId(0, 1, 0)) throw new IOException("no connection") else Future.unit,
      limits(5, 5),
      10,
      fixed(10, 100),
      new PeerTraffic(4),
      "a")
    assert(sender.send(Seq(b -> toB), data) === Set[BlockId](ShuffleBlockId(0, 1, 1)))
  }

  test("peers are sent to in circular order, starting after this executor") {
    val order = mutable.ArrayBuffer.empty[String]
    val d = BlockManagerId("d", "host-d", 4)
    // One block in flight at a time: the order of the sends is the order of the peers.
    new RunSender(
      (peer, _, _) => { order += peer.executorId; Future.unit },
      limits(1, 1),
      10,
      fixed(10, 10),
      new PeerTraffic(4),
      "c")
      .send(Seq(b -> blocks(1, 10), c -> blocks(2, 10), d -> blocks(3, 10)), data)
    assert(order === Seq("d", "b", "c"))
  }

  test(
    "the limit shrinks while uploads finish before the sender waits for them, to one increment") {
    val elastic = new ElasticLimit(10, 100, true, 4, 0.5, 2, 100)
    val toB = blocks(1, Seq.fill(20)(10L): _*)
    // Uploads that are done when started, on a clock that never moves: no wait at all.
    new RunSender(
      (_, _, _) => Future.unit,
      limits(100, 100),
      10,
      elastic,
      new PeerTraffic(4),
      "a",
      new ManualClock()).send(Seq(b -> toB), data)
    assert(elastic.min === 10 && elastic.current === 10)
  }
}
