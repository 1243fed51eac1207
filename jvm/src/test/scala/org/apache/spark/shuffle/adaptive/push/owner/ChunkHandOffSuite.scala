package org.apache.spark.shuffle.adaptive.push.owner

import java.nio.ByteBuffer

import scala.collection.mutable
import scala.concurrent.Future
import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.ManualClock
import org.apache.spark.shuffle.adaptive.push.background.BackgroundPriority
import org.apache.spark.shuffle.adaptive.memory.MemoryBound

class ChunkHandOffSuite extends AnyFunSuite with Eventually {

  private val peers = Seq("1", "2", "3").map(id => BlockManagerId(id, s"host-$id", 7000))

  /** A store of 1000 bytes holding 800: partition 0 in 100-byte chunks, 300 bytes elsewhere. */
  private def fullStore(): MergeStore = {
    val memory = new MemoryBound(1000)
    val s = new MergeStore(memory, 100, MergeStoreSuite.noDisk, () => None, _ => ())
    def push(mapId: Long, partition: Int, size: Int): Unit = {
      assert(memory.reserve(size))
      s.intake.append(0, mapId, partition, Array(size.toLong), ByteBuffer.allocateDirect(size))
    }
    (1 to 5).foreach(m => push(m, 0, 100))
    (1 to 3).foreach(m => push(m, m, 100))
    assert(memory.used === 800)
    s
  }

  /**
   * A hand-off whose peers start with `rooms` and take what `takes` says, and what it sent
   * where; a peer's room shrinks by what it took.
   */
  private final class Peers(initial: Map[String, Long], takes: String => Boolean = _ => true) {
    private val rooms = mutable.Map(initial.toSeq: _*)
    val sent = mutable.ArrayBuffer.empty[(String, Int, Int)]
    val asked = mutable.ArrayBuffer.empty[String]
    // The nice value of the thread that asked, per ask.
    val askedAt = mutable.ArrayBuffer.empty[Int]
    def handOff(s: MergeStore, clock: ManualClock = new ManualClock): ChunkHandOff =
      new ChunkHandOff(
        s,
        "0",
        () => peers,
        p => {
          synchronized {
            asked += p.executorId
            askedAt += BackgroundPriority.niceOfCurrentThread
          }
          Future.successful(synchronized(rooms.getOrElse(p.executorId, 0L)))
        },
        (p, chunks) => {
          synchronized(sent ++= chunks.map(c => (p.executorId, c.partition, c.chunkId)))
          if (!takes(p.executorId)) Set.empty
          else {
            synchronized(rooms(p.executorId) -= chunks.map(_.bytes).sum)
            chunks.toSet
          }
        },
        niceness = 3,
        clock = clock)
  }

  test("the hottest partition's chunks go to the peer with the most room, down to half full") {
    val s = fullStore()
    val p = new Peers(Map("1" -> 100, "2" -> 400))
    p.handOff(s).round()
    assert(s.memory.used === 500 && s.handOffs.bytesHandedOff === 300)
    assert(p.sent.map(_._1).toSet === Set("2") && p.sent.forall(_._2 == 0))
    assert(
      s.serving
        .layout(0, 0, 1, forPeer = true)
        .map(_.hostedAt.map(_.executorId))
        .count(_.contains("2")) === 3)
  }

  test("a peer that refuses is not sent to again in the round; the next with room is") {
    val s = fullStore()
    val p = new Peers(Map("1" -> 200, "2" -> 400, "3" -> 100), takes = _ != "2")
    p.handOff(s).round()
    assert(p.sent.map(_._1).distinct === Seq("2", "1", "3"))
    assert(s.memory.used === 500 && s.handOffs.bytesHandedOff === 300)
    assert(
      s.serving
        .layout(0, 0, 4, forPeer = true)
        .flatMap(_.hostedAt)
        .map(_.executorId)
        .sorted === Seq("1", "1", "3"))
  }

  test("with no room anywhere nothing moves, and no round starts again before the pause") {
    val s = fullStore()
    val clock = new ManualClock
    val p = new Peers(Map.empty)
    val handOff = p.handOff(s, clock)
    try {
      handOff.round()
      assert(p.sent.isEmpty && s.memory.used === 800 && p.asked.size === 3)
      assert(!handOff.wake(), "the last round found no room")
      clock.advance(1.second.toMillis)
      assert(handOff.wake())
      eventually(timeout(10.seconds))(assert(p.synchronized(p.asked.size) === 6))
      assert(
        p.synchronized(p.askedAt.toSeq) === Seq.fill(3)(BackgroundPriority.niceOfCurrentThread) ++
          Seq.fill(3)(math.min(19, BackgroundPriority.niceOfCurrentThread + 3)),
        "a round on the caller's thread, then on the hand-off thread, below the tasks")
    } finally handOff.stop()
  }

  test("below its mark an owner hands nothing off") {
    val s = fullStore()
    val p = new Peers(Map("1" -> 1000))
    val handOff = p.handOff(s)
    try {
      s.handOffs.take(100).foreach(c => s.handOffs.handedOff(c, peers.head))
      assert(s.memory.used === 700 && !handOff.wake())
    } finally handOff.stop()
  }

  test("once stopped (its executor stopping, its store cleared), a wake starts nothing") {
    val s = fullStore()
    val p = new Peers(Map("1" -> 1000))
    val handOff = p.handOff(s)
    handOff.stop()
    assert(s.memory.used > s.policy.handOffMark && !handOff.wake())
    assert(p.asked.isEmpty)
  }
}
