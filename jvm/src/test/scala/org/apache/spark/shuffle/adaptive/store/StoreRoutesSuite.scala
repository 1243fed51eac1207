package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

class StoreRoutesSuite extends AnyFunSuite {
  private val a = BlockManagerId("a", "host-a", 1)
  private val b = BlockManagerId("b", "host-b", 2)
  private val c = BlockManagerId("c", "host-c", 3)
  private def block(map: Long, reduce: Int, size: Long = 10L) =
    (ShuffleBlockId(0, map, reduce): BlockId, size, map.toInt)

  test("blocks a peer's store holds move to that peer; their home is remembered") {
    val byAddress = Seq(a -> Seq(block(1, 0), block(1, 1)), b -> Seq(block(2, 0)))
    val (routed, routes) = StoreRoutes.route(byAddress, Map((1L, 1) -> b))
    assert(
      routed.toMap.view.mapValues(_.toSeq).toMap ===
        Map(a -> Seq(block(1, 0)), b -> Seq(block(2, 0), block(1, 1))))
    assert(routes.homes === Map(ShuffleBlockId(0, 1, 1) -> a))
    assert(routes.stored === Set(ShuffleBlockId(0, 1, 1)))
    assert(routes.ownerOf(ShuffleBlockId(0, 1, 1), b) === a)
    assert(routes.ownerOf(ShuffleBlockId(0, 2, 0), b) === b)
  }

  test("a block held by its own executor's store stays, counted as stored") {
    val (routed, routes) = StoreRoutes.route(Seq(a -> Seq(block(1, 0))), Map((1L, 0) -> a))
    assert(routed === Seq(a -> Seq(block(1, 0))))
    assert(routes.homes.isEmpty && routes.stored === Set(ShuffleBlockId(0, 1, 0)))
  }

  test("a store's executor that holds no map output of the task becomes a new source") {
    val (routed, _) = StoreRoutes.route(Seq(a -> Seq(block(1, 0))), Map((1L, 0) -> c))
    assert(routed.toMap.view.mapValues(_.toSeq).toMap === Map(a -> Nil, c -> Seq(block(1, 0))))
  }

  test("every block is routed exactly once") {
    val byAddress = Seq(a -> (0 until 5).map(block(1, _)), b -> (0 until 5).map(block(2, _)))
    val located = Map((1L, 0) -> b, (1L, 3) -> c, (2L, 1) -> a, (2L, 2) -> b)
    val (routed, _) = StoreRoutes.route(byAddress, located)
    assert(routed.flatMap(_._2).sortBy(_._1.name) === byAddress.flatMap(_._2).sortBy(_._1.name))
  }
}
