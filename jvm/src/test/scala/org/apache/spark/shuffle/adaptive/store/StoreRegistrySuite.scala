package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.rpc.{RpcAddress, RpcCallContext}
import org.apache.spark.shuffle.adaptive.store.StoreRegistry._
import org.apache.spark.storage.BlockManagerId

class StoreRegistrySuite extends AnyFunSuite {

  /** The registry driven by hand, as its RPC endpoint thread would drive it. */
  private final class Driven(capacity: Long, executors: String*)(
      push: Boolean = false,
      pushAfterMapStage: Boolean = false) {
    @volatile var published: Option[StoreReport] = None
    val registry =
      new StoreRegistry(null, "pairwise", push, pushAfterMapStage, r => published = Some(r))
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
    new Driven(capacity, executors: _*)().start()

  /** mode=push, with shuffle 0 of `numMaps` map tasks and `numPartitions` reduce partitions. */
  private def pushing(
      capacity: Long,
      numMaps: Int,
      numPartitions: Int,
      executors: String*): Driven =
    pushing(afterMapStage = false, capacity, numMaps, numPartitions, executors: _*)

  private def pushing(
      afterMapStage: Boolean,
      capacity: Long,
      numMaps: Int,
      numPartitions: Int,
      executors: String*): Driven = {
    val d = new Driven(capacity, executors: _*)(push = true, afterMapStage).start()
    d.registry.receive(ShuffleRegistered(0, numMaps, numPartitions))
    d
  }

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
    d.registry.receive(StoreUsage("0", 40, 90, 30, 5))
    d.registry.receive(StoreUsage("9", 1, 1, 1, 1))
    d.place("0", 7, 80, 50, 70)
    val report = d.report
    assert(report.stores("0") === StoreReport.Store(100, 40, 90, 80, 30, 5))
    assert(!report.stores.contains("9"))
    assert((report.acceptedLocally, report.spilledToPeers, report.leftOnDisk) === (80, 50, 70))
    assert(report.metaShuffleRounds === 2)
  }

  test("push: each block goes to its partition's owner, largest predicted partition first") {
    val d = pushing(1000, 4, 3, "0", "1", "2")
    d.registry.receive(Observed(0, Array(0, 1, 2), Array(100, 300, 100)))
    assert(d.place("2", 7, 100, 300, 100) === Seq("1", "0", "2"))
    assert(d.report.push.placedAtOwners === 500)
    assert(d.report.acceptedLocally === 0 && d.report.spilledToPeers === 0)
  }

  test("push: what an owner cannot hold goes through the meta-shuffle, then to the file") {
    val d = pushing(100, 1, 2, "0", "1")
    d.registry.receive(Observed(0, Array(0, 1), Array(150, 90)))
    // Owner of 0 is "0", which cannot take 150; the map task's own store ("1") neither; no
    // other store. Partition 1's owner "1" takes it.
    assert(d.place("1", 7, 150, 90) === Seq("", "1"))
    assert(d.report.leftOnDisk === 150 && d.report.push.placedAtOwners === 90)
  }

  test("push: partitions with blocks at their owner keep it; the others are placed again") {
    val d = pushing(1000, 2, 3, "0", "1", "2")
    d.registry.receive(Observed(0, Array(0), Array(100)))
    assert(d.placeIn(0, "0", 1, 100) === Seq("0"))
    // Now partition 2 looks largest: unpinned, it would go to "0"; "0" holds partition 0.
    d.registry.receive(Observed(0, Array(1, 2), Array(50, 500)))
    assert(
      d.ask[Array[(String, String, Int)]](Place("0", 0, 2, Array(0, 1, 2), Array(10, 50, 500)))
        .map(_._1)
        .toSeq === Seq("0", "2", "1"))
  }

  test("push: an owner lost gives its partitions new owners") {
    val d = pushing(1000, 1, 2, "0", "1")
    d.registry.receive(Observed(0, Array(0, 1), Array(100, 100)))
    assert(d.place("0", 1, 100, 100) === Seq("0", "1"))
    d.registry.receive(ExecutorLost("1"))
    assert(d.place("0", 2, 100, 100) === Seq("0", "0"))
  }

  test("push: bytes are counted as arriving during or after their map stage") {
    val d = pushing(1000, 2, 1, "0", "1")
    d.registry.receive(Observed(0, Array(0), Array(10)))
    d.place("0", 1, 10)
    d.ask[Boolean](Arrived(0, 1, Array(0)))
    d.registry.receive(Observed(0, Array(0), Array(20)))
    d.place("1", 2, 20)
    d.registry.receive(MapStageEnded(0, ended = true))
    d.ask[Boolean](Arrived(0, 2, Array(0)))
    assert(d.report.push === StoreReport.Push(30, 10, 20, 0))
  }

  test("push: nothing is placed once the map stage ended, unless push.afterMapStage") {
    Seq(false, true).foreach { afterMapStage =>
      val d = pushing(afterMapStage, 1000, 3, 2, "0", "1")
      d.registry.receive(Observed(0, Array(0, 1), Array(20, 10)))
      assert(d.place("0", 1, 20, 10) === Seq("0", "1"))
      d.registry.receive(MapStageEnded(0, ended = true))
      val late = d.place("0", 2, 20, 10)
      assert(late === (if (afterMapStage) Seq("0", "1") else Seq("", "")), afterMapStage)
      assert(d.report.push.notPushed === (if (afterMapStage) 0 else 30), afterMapStage)
      assert(d.report.leftOnDisk === 0, afterMapStage)
      // A map stage submitted again (a retry) pushes again.
      d.registry.receive(MapStageEnded(0, ended = false))
      assert(d.place("0", 3, 20, 10) === Seq("0", "1"), afterMapStage)
    }
  }

  test("every change publishes the report (the driver's metrics source)") {
    val d = driven(100, "0", "1")
    d.place("0", 7, 60, 60)
    assert(d.published === Some(d.report))
    d.ask[Boolean](Arrived(0, 7, Array(0)))
    assert(d.published.get.notArrived === 60 && d.published === Some(d.report))
    d.registry.receive(StoreUsage("1", 5, 9, 0, 0))
    assert(d.published.get.stores("1").highWater === 9)
  }

  test("mode=store places blocks after the map stage ended (it has no push plan)") {
    val d = driven(100, "0", "1")
    d.registry.receive(MapStageEnded(0, ended = true))
    assert(d.place("0", 7, 60, 60) === Seq("0", "1"))
  }
}
