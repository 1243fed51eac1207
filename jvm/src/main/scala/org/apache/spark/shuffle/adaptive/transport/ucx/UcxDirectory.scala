package org.apache.spark.shuffle.adaptive.transport.ucx

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry._

/**
 * An executor's cache of what the driver's [[UcxRegistry]] knows: peers' worker addresses and
 * the regions of their map outputs, asked for in one call per request's missing map outputs.
 * Whether a peer has a worker is settled before it commits any map output (it registers first),
 * so both answers are kept; a peer's entries go when reading from it fails, a shuffle's when it
 * is unregistered.
 */
private[ucx] final class UcxDirectory(registry: RpcEndpointRef) {

  private[this] val workers = new ConcurrentHashMap[String, Option[Array[Byte]]]
  private[this] val regions = new ConcurrentHashMap[(String, Int, Long), UcxRegion]

  def worker(executorId: String): Option[Array[Byte]] =
    workers.computeIfAbsent(
      executorId,
      id => registry.askSync[Option[Array[Byte]]](LookUpWorker(id)))

  /** The regions of those of `mapIds` that `executorId` registered. */
  def regions(executorId: String, shuffleId: Int, mapIds: Seq[Long]): Map[Long, UcxRegion] = {
    val missing = mapIds.distinct.filterNot(id => regions.containsKey((executorId, shuffleId, id)))
    if (missing.nonEmpty) {
      Regions
        .decode(
          registry.askSync[Array[(Long, Long, Array[Byte], Array[Long])]](
            LookUpRegions(executorId, shuffleId, missing)))
        .foreach { case (mapId, region) => regions.put((executorId, shuffleId, mapId), region) }
    }
    mapIds.flatMap(id => Option(regions.get((executorId, shuffleId, id))).map(id -> _)).toMap
  }

  def forgetExecutor(executorId: String): Unit = {
    workers.remove(executorId)
    regions.keySet.asScala.filter(_._1 == executorId).foreach(regions.remove)
  }

  def forgetShuffle(shuffleId: Int): Unit =
    regions.keySet.asScala.filter(_._2 == shuffleId).foreach(regions.remove)
}
