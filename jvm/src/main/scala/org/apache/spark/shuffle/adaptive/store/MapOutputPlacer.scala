package org.apache.spark.shuffle.adaptive.store

import java.io.File

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.store.StoreRegistry.{Arrived, Place}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}

/**
 * Puts blocks of a committed map output into the shuffle stores: the driver's meta-shuffle
 * decides which store takes which block ([[StoreRegistry]]), the blocks for this executor's
 * store are copied from the file, those for other executors are uploaded to them
 * ([[SpillSender]]), and the driver learns which arrived. Whatever did not stays readable from
 * the file, which is kept in every case. Runs on the calling thread.
 */
private[spark] final class MapOutputPlacer(
    env: SparkEnv,
    store: ShuffleStore,
    registry: RpcEndpointRef)
    extends Logging {

  private[this] val self = env.executorId

  /**
   * Places `blocks` (`(reduceId, size)`, non-empty, in reduce order) of the map output in
   * `dataFile` with index `offsets`, and answers how many bytes arrived here and elsewhere.
   */
  def place(
      shuffleId: Int,
      mapId: Long,
      dataFile: File,
      offsets: Array[Long],
      blocks: IndexedSeq[(Int, Long)]): MapOutputPlacer.Placed = {
    if (blocks.isEmpty) return MapOutputPlacer.Placed(0, 0)
    val holders = registry.askSync[Array[(String, String, Int)]](
      Place(self, shuffleId, mapId, blocks.map(_._1).toArray, blocks.map(_._2).toArray))
    val arrived = mutable.ArrayBuffer.empty[Int]
    try {
      blocks.zip(holders).filter(_._2._1 == self).foreach { case ((reduceId, size), _) =>
        val id = ShuffleBlockId(shuffleId, mapId, reduceId)
        try {
          if (store.putFromFile(id, dataFile, offsets(reduceId), size)) arrived += reduceId
        } catch {
          case NonFatal(e) => logWarning(s"Could not store $id; it stays in its file", e)
        }
      }
      // Each peer takes a run of adjacent blocks; the sender picks the order of the peers.
      val runs = MapOutputPlacer
        .runs(blocks.zip(holders).map { case ((r, _), h) => (r, h) })
        .filter { case ((id, _, _), _) => id.nonEmpty && id != self }
      if (runs.nonEmpty) {
        val uploads = runs.map { case ((id, host, port), (first, last)) =>
          BlockManagerId(id, host, port) -> ShuffleBlockBatchId(shuffleId, mapId, first, last + 1)
        }
        val byId = uploads.map { case (_, run) => (run: BlockId) -> run }.toMap
        def bytes(run: ShuffleBlockBatchId) = offsets(run.endReduceId) - offsets(run.startReduceId)
        val toSend = uploads.map { case (peer, run) => peer -> Seq(run -> bytes(run)) }
        SpillSender(env).send(toSend, id => RunUpload.of(byId(id), dataFile, offsets)).foreach {
          id =>
            val run = byId(id)
            arrived ++= (run.startReduceId until run.endReduceId).filter(r =>
              offsets(r + 1) > offsets(r))
        }
      }
    } finally {
      registry.askSync[Boolean](Arrived(shuffleId, mapId, arrived.toArray))
    }
    val sizeOf = blocks.toMap
    val here = holders.iterator
      .zip(blocks.iterator)
      .collect {
        case ((holder, _, _), (r, _)) if holder == self => r
      }
      .toSet
    val (kept, spilled) = arrived.partition(here)
    MapOutputPlacer.Placed(kept.map(sizeOf).sum, spilled.map(sizeOf).sum)
  }
}

private[spark] object MapOutputPlacer {

  /** Bytes that arrived in this executor's store, and in other executors'. */
  final case class Placed(local: Long, remote: Long)

  /** A map output's non-empty blocks `(reduceId, size)`, in reduce order. */
  def blocks(offsets: Array[Long]): IndexedSeq[(Int, Long)] =
    offsets.indices
      .dropRight(1)
      .iterator
      .map(r => (r, offsets(r + 1) - offsets(r)))
      .filter(_._2 > 0)
      .toIndexedSeq

  /**
   * A map output's non-empty blocks `(reduceId, holder)` in reduce order, grouped into runs of
   * neighbours with the same holder: `(holder, (first reduce id, last reduce id))`, in order.
   * The blocks of a run are adjacent in the data file (empty blocks between them hold no bytes).
   */
  def runs[H](blocks: Seq[(Int, H)]): Seq[(H, (Int, Int))] =
    blocks
      .foldLeft(List.empty[(H, (Int, Int))]) {
        case ((holder, (first, _)) :: rest, (reduceId, h)) if h == holder =>
          (holder, (first, reduceId)) :: rest
        case (acc, (reduceId, h)) => (h, (reduceId, reduceId)) :: acc
      }
      .reverse
}
