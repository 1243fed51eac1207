package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.rpc.{RpcAddress, RpcCallContext}
import org.apache.spark.shuffle.adaptive.store.StoreRegistry._
import org.apache.spark.storage.BlockManagerId

class StoreRegistrySuite extends AnyFunSuite {

  /** The registry driven by hand, as its RPC endpoint thread would drive it. */
  private final class Driven(capacity: Long, executors: String*) {
    @volatile var published: Option[StoreReport] = None
    val registry = new StoreRegistry(null, "pairwise", r => published = Some(r))
    def start(): this.type = {
      executors.foreach(id =>
        registry.receive(StoreAdded(BlockManagerId(id, s"host-$id", 7000), capacity)))
      this
    }

    def ask[T](message: Any): T = {
      var answer: Any = null
      registry.receiveAndReply(new RpcCallContext {
        override def reply(response: Any): Unit = answer = response
        override def sendFailure(e: Throwable): Unit = throw e
        override def senderAddress: RpcAddress = null
      })(message)
      answer.asInstanceOf[T]
    }

    def place(executor: String, mapId: Long, sizes: Long*): Seq[String] =
      placeIn(0, executor, mapId, sizes: _*)

    def placeIn(shuffleId: Int, executor: String, mapId: Long, sizes: Long*): Seq[String] =
      ask[Array[(String, String, Int)]](
        Place(executor, shuffleId, mapId, sizes.indices.toArray, sizes.toArray)).map(_._1).toSeq

    def locate(mapIds: Long*): Set[(Long, Int, String)] =
      ask[Array[(Long, Int, String, String, Int)]](Locate(0, mapIds.toArray, 0, 100)).map {
        case (m, r, id, _, _) => (m, r, id)
      }.toSet

    def report: StoreReport = ask[StoreReport](Snapshot)
  }

  private def driven(capacity: Long, executors: String*) =
    new Driven(capacity, executors: _*).start()

  test("placed blocks are located only once their map task says they arrived") {
    val d = driven(100, "0", "1")
    assert(d.place("0", 7, 60, 60) === Seq("0", "1"))
    assert(d.locate(7).isEmpty)
    assert(d.ask[Boolean](Arrived(0, 7, Array(0, 1))))
    assert(d.locate(7) === Set((7L, 0, "0"), (7L, 1, "1")))
    val hosts = d.ask[Array[(Long, Int, String, String, Int)]](Locate(0, Array(7L), 1, 2))
    assert(hosts.toSeq === Seq((7L, 1, "1", "host-1", 7000)))
  }

  test("placed blocks that did not arrive are released and read from their files") {
    val d = driven(100, "0", "1")
    d.place("0", 7, 60, 60)
    d.ask[Boolean](Arrived(0, 7, Array(0)))
    assert(d.locate(7) === Set((7L, 0, "0")))
    assert(d.report.stores("1") === StoreReport.Store(100, 0, 0, 60))
    assert(d.report.notArrived === 60 && d.report.spilledToPeers === 60)
    assert(d.place("0", 8, 100) === Seq("1"), "the released room is offered again")
  }

  test("an executor lost: its blocks are no longer located and it takes no more blocks") {
    val d = driven(100, "0", "1", "2")
    d.place("0", 7, 100, 50, 50)
    d.ask[Boolean](Arrived(0, 7, Array(0, 1, 2)))
    assert(d.locate(7).map(_._3) === Set("0", "1"))
    d.registry.receive(ExecutorLost("1"))
    assert(d.locate(7) === Set((7L, 0, "0")))
    assert(!d.report.stores.contains("1"))
    assert(d.place("0", 8, 10) === Seq("2"))
  }

  test("a block placed on an executor lost before it arrived is not located") {
    val d = driven(100, "0", "1")
    d.place("0", 7, 100, 50)
    d.registry.receive(ExecutorLost("1"))
    d.ask[Boolean](Arrived(0, 7, Array(0, 1)))
    assert(d.locate(7) === Set((7L, 0, "0")))
  }

  test("a shuffle removed: its blocks go and their room is free again") {
    val d = driven(100, "0")
    d.place("0", 7, 100)
    d.ask[Boolean](Arrived(0, 7, Array(0)))
    d.registry.receive(ShuffleRemoved(0))
    assert(d.locate(7).isEmpty)
    assert(d.placeIn(1, "0", 8, 100) === Seq("0"))
    assert(d.place("0", 9, 10) === Seq(""), "nothing of a removed shuffle is placed any more")
  }

  test("a map task's executor lost before it said what arrived: its placed bytes are released") {
    val d = driven(100, "0", "1")
    d.place("0", 7, 100, 100)
    d.registry.receive(ExecutorLost("0"))
    assert(d.report.stores("1").placedHighWater === 100)
    assert(d.place("1", 8, 100) === Seq("1"))
  }

  test("usage the executors report is kept per store; totals add up by where bytes went") {
    val d = driven(100, "0", "1")
    d.registry.receive(StoreUsage("0", 40, 90))
    d.registry.receive(StoreUsage("9", 1, 1))
    d.place("0", 7, 80, 50, 70)
    val report = d.report
    assert(report.stores("0") === StoreReport.Store(100, 40, 90, 80))
    assert(!report.stores.contains("9"))
    assert((report.acceptedLocally, report.spilledToPeers, report.leftOnDisk) === (80, 50, 70))
    assert(report.metaShuffleRounds === 2)
  }

  test("every change publishes the report (the driver's metrics source)") {
    val d = driven(100, "0", "1")
    d.place("0", 7, 60, 60)
    assert(d.published === Some(d.report))
    d.ask[Boolean](Arrived(0, 7, Array(0)))
    assert(d.published.get.notArrived === 60 && d.published === Some(d.report))
    d.registry.receive(StoreUsage("1", 5, 9))
    assert(d.published.get.stores("1").highWater === 9)
  }
}
