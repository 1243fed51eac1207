package org.apache.spark.shuffle.adaptive.transport.ucx

import scala.collection.mutable

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.rpc.{RpcCallContext, RpcEndpointRef, RpcEnv, ThreadSafeRpcEndpoint}
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved}
import org.apache.spark.util.RpcUtils

/**
 * The driver's directory of UCX workers and registered map outputs. Executors publish to it and
 * look up in it through Spark RPC only (authenticated when `spark.authenticate` is on), so a
 * peer learns a region's key from the driver, never from a side channel.
 *
 * Entries of an executor go when Spark removes the executor; those of a shuffle when the shuffle
 * is unregistered.
 */
private[spark] final class UcxRegistry(override val rpcEnv: RpcEnv) extends ThreadSafeRpcEndpoint {
  import UcxRegistry._

  private[this] val workers = mutable.HashMap.empty[String, Array[Byte]]
  private[this] val regions = mutable.HashMap.empty[(String, Int), mutable.HashMap[Long, UcxRegion]]

  override def receive: PartialFunction[Any, Unit] = {
    case ExecutorLost(executorId) =>
      workers -= executorId
      regions.keys.filter(_._1 == executorId).toList.foreach(regions -= _)
    case ShuffleRemoved(shuffleId) =>
      regions.keys.filter(_._2 == shuffleId).toList.foreach(regions -= _)
  }

  override def receiveAndReply(context: RpcCallContext): PartialFunction[Any, Unit] = {
    case RegisterWorker(executorId, address) =>
      workers(executorId) = address
      context.reply(true)
    case RegisterRegion(executorId, shuffleId, mapId, region) =>
      // A region of an executor Spark already removed would never be dropped.
      val known = workers.contains(executorId)
      if (known)
        regions.getOrElseUpdate((executorId, shuffleId), mutable.HashMap.empty)(mapId) = region
      context.reply(known)
    case LookUpWorker(executorId) =>
      context.reply(workers.get(executorId))
    case LookUpRegions(executorId, shuffleId, mapIds) =>
      val found = regions.get((executorId, shuffleId))
      context.reply(Regions(mapIds.flatMap(id => found.flatMap(_.get(id)).map(id -> _)).toMap))
  }
}

private[spark] object UcxRegistry {

  val Name = "pyspark-shuffle-ucx-registry"

  // Executors deserialize what Spark RPC delivers with Spark's own class loader, which does not
  // see the plugin's jar (spark.jars): the messages executors send and the replies they get are
  // tagged tuples of Scala and Java types, built and matched by the objects below.

  object RegisterWorker {
    private val Tag = "ucx.registerWorker"
    def apply(executorId: String, address: Array[Byte]): Product = (Tag, executorId, address)
    def unapply(message: Any): Option[(String, Array[Byte])] = message match {
      case (Tag, executorId: String, address: Array[Byte]) => Some((executorId, address))
      case _ => None
    }
  }

  object RegisterRegion {
    private val Tag = "ucx.registerRegion"
    def apply(executorId: String, shuffleId: Int, mapId: Long, region: UcxRegion): Product =
      (Tag, executorId, shuffleId, mapId, region.address, region.rkey, region.offsets)
    def unapply(message: Any): Option[(String, Int, Long, UcxRegion)] = message match {
      case (
            Tag,
            executorId: String,
            shuffleId: Int,
            mapId: Long,
            address: Long,
            rkey: Array[Byte],
            offsets: Array[Long]) =>
        Some((executorId, shuffleId, mapId, UcxRegion(address, rkey, offsets)))
      case _ => None
    }
  }

  /** Replied to with the worker's address, if the executor registered one. */
  object LookUpWorker {
    private val Tag = "ucx.lookUpWorker"
    def apply(executorId: String): Product = (Tag, executorId)
    def unapply(message: Any): Option[String] = message match {
      case (Tag, executorId: String) => Some(executorId)
      case _ => None
    }
  }

  /** Replied to with [[Regions]]. */
  object LookUpRegions {
    private val Tag = "ucx.lookUpRegions"
    def apply(executorId: String, shuffleId: Int, mapIds: Seq[Long]): Product =
      (Tag, executorId, shuffleId, mapIds.toArray)
    def unapply(message: Any): Option[(String, Int, Seq[Long])] = message match {
      case (Tag, executorId: String, shuffleId: Int, mapIds: Array[Long]) =>
        Some((executorId, shuffleId, mapIds.toSeq))
      case _ => None
    }
  }

  /** Regions by map id, as `(mapId, address, rkey, offsets)` tuples. */
  object Regions {
    def apply(regions: Map[Long, UcxRegion]): Array[(Long, Long, Array[Byte], Array[Long])] =
      regions.iterator.map { case (mapId, r) => (mapId, r.address, r.rkey, r.offsets) }.toArray
    def decode(reply: Array[(Long, Long, Array[Byte], Array[Long])]): Map[Long, UcxRegion] =
      reply.iterator.map { case (mapId, address, rkey, offsets) =>
        mapId -> UcxRegion(address, rkey, offsets)
      }.toMap
  }

  /** Driver-local messages (never serialized). */
  final case class ExecutorLost(executorId: String)
  final case class ShuffleRemoved(shuffleId: Int)

  /** Starts the registry on the driver of `sc`; call once per SparkContext. */
  def start(sc: SparkContext): RpcEndpointRef = {
    val ref = sc.env.rpcEnv.setupEndpoint(Name, new UcxRegistry(sc.env.rpcEnv))
    sc.addSparkListener(new SparkListener {
      override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
        ref.send(ExecutorLost(removed.executorId))
    })
    ref
  }

  /** The registry as an executor (or the driver) reaches it. */
  def ref(env: SparkEnv): RpcEndpointRef = RpcUtils.makeDriverRef(Name, env.conf, env.rpcEnv)
}
