package org.apache.spark.shuffle.adaptive.store

import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

/**
 * Where a reduce task reads its blocks in mode=store: each block a store holds is read from that
 * store's executor, the others from their map output's executor.
 *
 * @param homes the map-output executor of each block read from another executor's store: where
 *              it is read if that store fails, and whom a fetch failure names
 * @param stored every block read from a store, its own executor's included
 */
private[spark] final case class StoreRoutes(
    homes: Map[BlockId, BlockManagerId],
    stored: Set[BlockId]) {

  /** Whom a failed fetch of `id`, asked of `address`, names. */
  def ownerOf(id: BlockId, address: BlockManagerId): BlockManagerId = homes.getOrElse(id, address)
}

private[spark] object StoreRoutes {

  val NoStores: StoreRoutes = StoreRoutes(Map.empty, Set.empty)

  type Blocks = collection.Seq[(BlockId, Long, Int)]

  /**
   * Moves each block of `byAddress` (the map output tracker's view) that `located` puts in a
   * store (by map id and reduce id) to that store's executor.
   */
  def route(
      byAddress: Seq[(BlockManagerId, Blocks)],
      located: Map[(Long, Int), BlockManagerId]): (Seq[(BlockManagerId, Blocks)], StoreRoutes) = {
    val moved = Seq.newBuilder[(BlockManagerId, (BlockId, Long, Int))]
    val homes = Map.newBuilder[BlockId, BlockManagerId]
    val stored = Set.newBuilder[BlockId]
    val staying = byAddress.map { case (home, blocks) =>
      home -> blocks.filter { case block @ (id, _, _) =>
        id match {
          case ShuffleBlockId(_, mapId, reduceId) if located.contains((mapId, reduceId)) =>
            val holder = located((mapId, reduceId))
            stored += id
            if (holder == home) true
            else {
              moved += holder -> block
              homes += id -> home
              false
            }
          case _ => true
        }
      }
    }
    val arriving = moved.result().groupMap(_._1)(_._2)
    val merged = staying.map { case (address, blocks) =>
      address -> (blocks ++ arriving.getOrElse(address, Nil))
    }
    val newcomers = arriving.filter { case (address, _) => !byAddress.exists(_._1 == address) }
    (merged ++ newcomers.toSeq, StoreRoutes(homes.result(), stored.result()))
  }
}
