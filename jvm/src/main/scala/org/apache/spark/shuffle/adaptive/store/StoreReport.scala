package org.apache.spark.shuffle.adaptive.store

/**
 * What the meta-shuffle did over the application, and each store's memory.
 *
 * @param acceptedLocally bytes placed in their map task's own executor's store
 * @param spilledToPeers bytes placed in other executors' stores (remote-memory spill)
 * @param leftOnDisk bytes no store could hold, read from their map-output files
 * @param notArrived bytes placed in a store that did not receive them (read from their files)
 * @param metaShuffleRounds offers of a map output's blocks to one store, own and peers alike
 * @param push what mode=push did (zeros in mode=store)
 */
private[spark] final case class StoreReport(
    stores: Map[String, StoreReport.Store],
    acceptedLocally: Long,
    spilledToPeers: Long,
    leftOnDisk: Long,
    notArrived: Long,
    metaShuffleRounds: Long,
    push: StoreReport.Push) {

  /** As Python receives it (snake_case keys, plain values). */
  def toMap: Map[String, Any] = Map(
    "accepted_locally" -> acceptedLocally,
    "spilled_to_peers" -> spilledToPeers,
    "left_on_disk" -> leftOnDisk,
    "not_arrived" -> notArrived,
    "meta_shuffle_rounds" -> metaShuffleRounds,
    "push" -> Map(
      "placed_at_owners" -> push.placedAtOwners,
      "arrived_during_map_stage" -> push.duringMapStage,
      "arrived_after_map_stage" -> push.afterMapStage,
      "not_pushed_after_map_stage" -> push.notPushed,
      "left_to_pull" -> stores.values.map(_.pushRefused).sum,
      "queue_high_water" -> stores.values.map(_.pushQueueHighWater).maxOption.getOrElse(0L)),
    "stores" -> stores.map { case (id, s) =>
      id -> Map(
        "capacity" -> s.capacity,
        "used" -> s.used,
        "high_water" -> s.highWater,
        "placed_high_water" -> s.placedHighWater,
        "push_queue_high_water" -> s.pushQueueHighWater,
        "push_refused" -> s.pushRefused)
    })
}

private[spark] object StoreReport {

  /**
   * @param used bytes held, as the executor last reported
   * @param highWater the most bytes it ever held, as the executor measured
   * @param placedHighWater the most bytes the driver ever placed in it
   * @param pushQueueHighWater mode=push: the most bytes its executor had waiting to be pushed
   * @param pushRefused mode=push: bytes its executor's full push queue left in their files
   */
  final case class Store(
      capacity: Long,
      used: Long,
      highWater: Long,
      placedHighWater: Long,
      pushQueueHighWater: Long = 0,
      pushRefused: Long = 0)

  /**
   * @param placedAtOwners bytes placed in the store of their partition's owner
   * @param duringMapStage bytes pushed that arrived in a store while their map stage ran
   * @param afterMapStage bytes pushed that arrived after it ended (reduce tasks may have read
   *                      them from their files already)
   * @param notPushed bytes still queued when their map stage ended, left in their files
   *                  (`push.afterMapStage=false`)
   */
  final case class Push(
      placedAtOwners: Long,
      duringMapStage: Long,
      afterMapStage: Long,
      notPushed: Long)
}
