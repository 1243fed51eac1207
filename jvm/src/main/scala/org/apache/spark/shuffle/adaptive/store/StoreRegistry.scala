package org.apache.spark.shuffle.adaptive.store

import scala.collection.mutable

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.rpc.{RpcCallContext, RpcEndpointRef, RpcEnv, ThreadSafeRpcEndpoint}
import org.apache.spark.scheduler.{SparkListener, SparkListenerBlockManagerAdded, SparkListenerExecutorRemoved}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.RpcUtils

/**
 * The driver's side of mode=store: it knows every executor's store (one per block manager that
 * runs tasks), arbitrates the meta-shuffle of every committed map output ([[StoreLedger]]), and
 * knows which store holds which block, for reduce tasks to look up.
 *
 * A block is placed (its bytes counted against the store) before it is copied, and located
 * only once its map task reports it arrived; placed blocks that did not arrive are released.
 * Entries of an executor go when Spark removes it (its blocks are then read from their files);
 * those of a shuffle when it is unregistered, after which nothing of it is placed.
 *
 * After every change the new [[StoreReport]] goes to `published` (the driver's metrics source).
 */
private[spark] final class StoreRegistry(
    override val rpcEnv: RpcEnv,
    offerOrder: String,
    published: StoreReport => Unit)
    extends ThreadSafeRpcEndpoint {
  import StoreRegistry._

  private[this] val ledger = new StoreLedger(offerOrder)
  private[this] val addresses = mutable.HashMap.empty[String, BlockManagerId]
  private[this] val reported = mutable.HashMap.empty[String, Reported]

  /** shuffle -> map -> reduce -> (holder, size) */
  private[this] val located =
    mutable.HashMap.empty[Int, mutable.HashMap[Long, mutable.HashMap[Int, (String, Long)]]]

  /** (shuffle, map) -> (the map task's executor, blocks placed: (reduce, size, holder)) */
  private[this] val pending =
    mutable.HashMap.empty[(Int, Long), (String, Seq[(Int, Long, String)])]
  private[this] val removedShuffles = mutable.HashSet.empty[Int]
  private[this] val totals = new Totals

  // Every message here may change what the report says; the report is published after each.
  override def receive: PartialFunction[Any, Unit] = changes.andThen(_ => published(snapshot()))

  private def changes: PartialFunction[Any, Unit] = {
    case StoreAdded(address, capacity) =>
      addresses(address.executorId) = address
      ledger.register(address.executorId, capacity)
    case StoreUsage(executorId, used, highWater) =>
      if (addresses.contains(executorId)) reported(executorId) = Reported(used, highWater)
    case ExecutorLost(executorId) =>
      ledger.remove(executorId)
      addresses -= executorId
      reported -= executorId
      located.values.foreach(_.values.foreach(_.filterInPlace { case (_, (holder, _)) =>
        holder != executorId
      }))
      // A lost map task's executor never says what arrived.
      pending.filter(_._2._1 == executorId).keys.toList.foreach(releasePending)
    case ShuffleRemoved(shuffleId) =>
      removedShuffles += shuffleId
      located
        .remove(shuffleId)
        .foreach(_.values.foreach(_.values.foreach { case (holder, size) =>
          ledger.release(holder, size)
        }))
      pending.keys.filter(_._1 == shuffleId).toList.foreach(releasePending)
  }

  private def releasePending(key: (Int, Long)): Unit =
    pending
      .remove(key)
      .foreach(_._2.foreach { case (_, size, holder) =>
        ledger.release(holder, size)
      })

  override def receiveAndReply(context: RpcCallContext): PartialFunction[Any, Unit] = {
    case Place(executorId, shuffleId, mapId, reduceIds, sizes) =>
      val blocks = reduceIds.toSeq.zip(sizes.toSeq)
      val placed =
        if (removedShuffles(shuffleId)) blocks.map { case (r, size) => (r, size, None) }
        else ledger.place(executorId, blocks)
      pending((shuffleId, mapId)) = (
        executorId,
        placed.collect { case (reduceId, size, Some(holder)) =>
          (reduceId, size, holder)
        })
      totals.count(executorId, placed)
      published(snapshot())
      context.reply(placed.map { case (_, _, holder) =>
        holder
          .flatMap(addresses.get)
          .map(a => (a.executorId, a.host, a.port))
          .getOrElse(("", "", 0))
      }.toArray)
    case Arrived(shuffleId, mapId, reduceIds) =>
      val arrived = reduceIds.toSet
      pending
        .remove((shuffleId, mapId))
        .foreach(_._2.foreach { case (reduceId, size, holder) =>
          if (arrived(reduceId) && addresses.contains(holder)) {
            located
              .getOrElseUpdate(shuffleId, mutable.HashMap.empty)
              .getOrElseUpdate(mapId, mutable.HashMap.empty)(reduceId) = (holder, size)
          } else {
            ledger.release(holder, size)
            totals.failed(size)
          }
        })
      published(snapshot())
      context.reply(true)
    case Locate(shuffleId, mapIds, startPartition, endPartition) =>
      val maps = located.getOrElse(shuffleId, mutable.HashMap.empty)
      val found = for {
        mapId <- mapIds.iterator
        blocks <- maps.get(mapId).iterator
        (reduceId, (holder, _)) <- blocks.iterator
        if reduceId >= startPartition && reduceId < endPartition
        address <- addresses.get(holder).iterator
      } yield (mapId, reduceId, holder, address.host, address.port)
      context.reply(found.toArray)
    case Snapshot =>
      context.reply(snapshot())
  }

  private def snapshot(): StoreReport = {
    val stores = ledger.snapshot.map { case (id, usage) =>
      val r = reported.getOrElse(id, Reported(0, 0))
      id -> StoreReport.Store(usage.capacity, r.used, r.highWater, usage.highWater)
    }
    StoreReport(
      stores,
      totals.local,
      totals.spilled,
      totals.onDisk,
      totals.notArrived,
      ledger.metaShuffleRounds)
  }
}

private[spark] object StoreRegistry {

  val Name = "pyspark-shuffle-store-registry"

  // As for the UCX registry: executors deserialize RPC with Spark's class loader, which does not
  // see spark.jars, so messages and replies are tagged tuples of Scala and Java types.

  /** Replied to with `(executorId, host, port)` of each block's store, `("", "", 0)` for its file. */
  object Place {
    private val Tag = "store.place"
    def apply(
        executorId: String,
        shuffleId: Int,
        mapId: Long,
        reduceIds: Array[Int],
        sizes: Array[Long]): Product = (Tag, executorId, shuffleId, mapId, reduceIds, sizes)
    def unapply(m: Any): Option[(String, Int, Long, Array[Int], Array[Long])] = m match {
      case (
            Tag,
            id: String,
            shuffleId: Int,
            mapId: Long,
            reduceIds: Array[Int],
            sizes: Array[Long]) =>
        Some((id, shuffleId, mapId, reduceIds, sizes))
      case _ => None
    }
  }

  /** The placed blocks of a map output that reached their stores; the others are released. */
  object Arrived {
    private val Tag = "store.arrived"
    def apply(shuffleId: Int, mapId: Long, reduceIds: Array[Int]): Product =
      (Tag, shuffleId, mapId, reduceIds)
    def unapply(m: Any): Option[(Int, Long, Array[Int])] = m match {
      case (Tag, shuffleId: Int, mapId: Long, reduceIds: Array[Int]) =>
        Some((shuffleId, mapId, reduceIds))
      case _ => None
    }
  }

  /** Replied to with `(mapId, reduceId, executorId, host, port)` of each stored block. */
  object Locate {
    private val Tag = "store.locate"
    def apply(
        shuffleId: Int,
        mapIds: Array[Long],
        startPartition: Int,
        endPartition: Int): Product = (Tag, shuffleId, mapIds, startPartition, endPartition)
    def unapply(m: Any): Option[(Int, Array[Long], Int, Int)] = m match {
      case (Tag, shuffleId: Int, mapIds: Array[Long], start: Int, end: Int) =>
        Some((shuffleId, mapIds, start, end))
      case _ => None
    }
  }

  /** A store's bytes held and high-water mark, as the executor measured them. */
  object StoreUsage {
    private val Tag = "store.usage"
    def apply(executorId: String, used: Long, highWater: Long): Product =
      (Tag, executorId, used, highWater)
    def unapply(m: Any): Option[(String, Long, Long)] = m match {
      case (Tag, id: String, used: Long, highWater: Long) => Some((id, used, highWater))
      case _ => None
    }
  }

  private final case class Reported(used: Long, highWater: Long)

  /** Driver-local messages (never serialized). */
  final case class StoreAdded(address: BlockManagerId, capacity: Long)
  final case class ExecutorLost(executorId: String)
  final case class ShuffleRemoved(shuffleId: Int)

  /** Replied to with a [[StoreReport]]. */
  case object Snapshot

  /** Bytes by where the meta-shuffle put them, over the application. */
  private final class Totals {
    var local = 0L
    var spilled = 0L
    var onDisk = 0L
    var notArrived = 0L
    def count(self: String, placed: Seq[(Int, Long, Option[String])]): Unit = placed.foreach {
      case (_, size, Some(holder)) if holder == self => local += size
      case (_, size, Some(_)) => spilled += size
      case (_, size, None) => onDisk += size
    }
    def failed(size: Long): Unit = notArrived += size
  }

  /**
   * Starts the registry on the driver of `sc` (once per SparkContext) with a store of
   * `capacity` bytes on every executor, those that come later included. The driver's own block
   * manager runs tasks, and so has a store, in local mode only.
   */
  def start(
      sc: SparkContext,
      offerOrder: String,
      capacity: Long,
      published: StoreReport => Unit): RpcEndpointRef = {
    val ref =
      sc.env.rpcEnv.setupEndpoint(Name, new StoreRegistry(sc.env.rpcEnv, offerOrder, published))
    def add(address: BlockManagerId): Unit =
      if (!address.isDriver || sc.isLocal) ref.send(StoreAdded(address, capacity))
    sc.addSparkListener(new SparkListener {
      override def onBlockManagerAdded(added: SparkListenerBlockManagerAdded): Unit =
        add(added.blockManagerId)
      override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
        ref.send(ExecutorLost(removed.executorId))
    })
    sc.env.blockManager.master.getMemoryStatus.keys.foreach(add)
    ref
  }

  def ref(env: SparkEnv): RpcEndpointRef = RpcUtils.makeDriverRef(Name, env.conf, env.rpcEnv)
}
