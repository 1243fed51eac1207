package org.apache.spark.shuffle.adaptive.store

/**
 * What the meta-shuffle did over the application, and each store's memory.
 *
 * @param acceptedLocally bytes placed in their map task's own executor's store
 * @param spilledToPeers bytes placed in other executors' stores (remote-memory spill)
 * @param leftOnDisk bytes no store could hold, read from their map-output files
 * @param notArrived bytes placed in a store that did not receive them (read from their files)
 * @param metaShuffleRounds offers of a map output's blocks to one store, own and peers alike
 */
private[spark] final case class StoreReport(
    stores: Map[String, StoreReport.Store],
    acceptedLocally: Long,
    spilledToPeers: Long,
    leftOnDisk: Long,
    notArrived: Long,
    metaShuffleRounds: Long) {

  /** As Python receives it (snake_case keys, plain values). */
  def toMap: Map[String, Any] = Map(
    "accepted_locally" -> acceptedLocally,
    "spilled_to_peers" -> spilledToPeers,
    "left_on_disk" -> leftOnDisk,
    "not_arrived" -> notArrived,
    "meta_shuffle_rounds" -> metaShuffleRounds,
    "stores" -> stores.map { case (id, s) =>
      id -> Map(
        "capacity" -> s.capacity,
        "used" -> s.used,
        "high_water" -> s.highWater,
        "placed_high_water" -> s.placedHighWater)
    })
}

private[spark] object StoreReport {

  /**
   * @param used bytes held, as the executor last reported
   * @param highWater the most bytes it ever held, as the executor measured
   * @param placedHighWater the most bytes the driver ever placed in it
   */
  final case class Store(capacity: Long, used: Long, highWater: Long, placedHighWater: Long)
}
