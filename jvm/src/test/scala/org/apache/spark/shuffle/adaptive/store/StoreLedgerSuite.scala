package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

class StoreLedgerSuite extends AnyFunSuite {

  private def ledger(order: String, capacities: (String, Long)*): StoreLedger = {
    val l = new StoreLedger(order)
    capacities.foreach { case (id, c) => l.register(id, c) }
    l
  }

  private def holders(placed: Seq[(Int, Long, Option[String])]): Seq[Option[String]] =
    placed.map(_._3)

  test("the map task's own store takes the blocks in order while they fit") {
    val l = ledger("pairwise", "0" -> 100L, "1" -> 100L)
    assert(holders(l.place("0", Seq(0 -> 60L, 1 -> 40L))) === Seq(Some("0"), Some("0")))
    assert(l.snapshot("0").used === 100)
  }

  test("what the own store rejects is offered to peers, each accepting in order (Algorithm 2)") {
    val l = ledger("pairwise", "0" -> 50L, "1" -> 30L, "2" -> 100L)
    val placed = l.place("0", Seq(0 -> 40L, 1 -> 20L, 2 -> 20L, 3 -> 30L))
    // Own store: 40 fits, 20 does not (60 > 50): stops. Peer 1 takes 20 (and 20 > 30-20 stops),
    // peer 2 takes the rest.
    assert(holders(placed) === Seq(Some("0"), Some("1"), Some("2"), Some("2")))
    assert(placed.map(_._1) === Seq(0, 1, 2, 3))
  }

  test("blocks no store can hold stay on disk, and no store ever goes over its capacity") {
    val l = ledger("capacity", "0" -> 10L, "1" -> 10L)
    val placed = l.place("0", Seq(0 -> 8L, 1 -> 8L, 2 -> 8L))
    assert(holders(placed) === Seq(Some("0"), Some("1"), None))
    val random = new scala.util.Random(3)
    val big = ledger("capacity", (0 until 5).map(i => i.toString -> 1000L): _*)
    (1 to 200).foreach { m =>
      big.place((m % 5).toString, Seq.tabulate(6)(r => r -> (1L + random.nextInt(300))))
      big.snapshot.values.foreach(u => assert(u.used <= u.capacity && u.highWater <= u.capacity))
    }
  }

  test("skew-aware: a hot executor's overflow goes to the store with the most free memory") {
    val l = ledger("capacity", "0" -> 100L, "1" -> 100L, "2" -> 100L, "3" -> 100L)
    l.place("1", Seq(0 -> 70L))
    l.place("2", Seq(0 -> 10L))
    // Executor 0 holds the hot partition: its store fills, the rest goes to 3 (free 100).
    val placed = l.place("0", Seq(0 -> 100L, 1 -> 90L))
    assert(holders(placed) === Seq(Some("0"), Some("3")))
  }

  test("pairwise spills to the next executor, naive to the first in id order") {
    def spillOf(order: String) = {
      val l = ledger(order, "0" -> 100L, "1" -> 100L, "2" -> 10L, "3" -> 100L)
      holders(l.place("2", Seq(0 -> 10L, 1 -> 50L)))
    }
    assert(spillOf("pairwise") === Seq(Some("2"), Some("3")))
    assert(spillOf("naive") === Seq(Some("2"), Some("0")))
  }

  test("released bytes make room again; a removed executor takes no blocks") {
    val l = ledger("pairwise", "0" -> 10L, "1" -> 10L)
    l.place("0", Seq(0 -> 10L))
    l.release("0", 10)
    assert(l.snapshot("0").used === 0 && l.snapshot("0").highWater === 10)
    l.remove("1")
    assert(holders(l.place("0", Seq(0 -> 10L, 1 -> 5L))) === Seq(Some("0"), None))
  }

  test("meta-shuffle rounds count each offer, to the own store and to each peer") {
    val l = ledger("pairwise", "0" -> 10L, "1" -> 10L, "2" -> 10L)
    l.place("0", Seq(0 -> 10L))
    assert(l.metaShuffleRounds === 1)
    l.place("0", Seq(0 -> 10L, 1 -> 10L))
    assert(l.metaShuffleRounds === 1 + 3)
  }

  test("an executor without a store still spills its map outputs to peers") {
    val l = ledger("pairwise", "1" -> 10L)
    assert(holders(l.place("0", Seq(0 -> 5L))) === Seq(Some("1")))
  }
}
