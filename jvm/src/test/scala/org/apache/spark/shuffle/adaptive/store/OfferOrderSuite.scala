package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

class OfferOrderSuite extends AnyFunSuite {
  private val free = Map("0" -> 10L, "1" -> 50L, "2" -> 50L, "3" -> 90L, "10" -> 0L)

  test("pairwise: rank i offers to i+1, i+2, ... round the circle (CSA)") {
    assert(OfferOrder.peers("pairwise", "2", free) === Seq("3", "10", "0", "1"))
    assert(OfferOrder.peers("pairwise", "10", free) === Seq("0", "1", "2", "3"))
  }

  test("naive: every executor offers in the same order of executor ids (DSA)") {
    assert(OfferOrder.peers("naive", "2", free) === Seq("0", "1", "3", "10"))
    assert(OfferOrder.peers("naive", "0", free) === Seq("1", "2", "3", "10"))
  }

  test("capacity (skew-aware): the freest store first, ties in pairwise order") {
    assert(OfferOrder.peers("capacity", "0", free) === Seq("3", "1", "2", "10"))
    assert(OfferOrder.peers("capacity", "1", free) === Seq("3", "2", "0", "10"))
  }

  test("the executor itself is never a peer") {
    Seq("pairwise", "naive", "capacity").foreach { order =>
      assert(!OfferOrder.peers(order, "3", free).contains("3"))
    }
  }
}
