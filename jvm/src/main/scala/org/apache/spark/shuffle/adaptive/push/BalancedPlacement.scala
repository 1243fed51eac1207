package org.apache.spark.shuffle.adaptive.push

import scala.collection.mutable

import org.apache.spark.shuffle.adaptive.flow.ExecutorOrder

/**
 * iShuffle's partition placement (section 3.3.2, Algorithm 1): largest partition first, onto
 * the executor with the least bytes placed so far. Partitions that are pinned (something of
 * them was pushed to their owner) keep their owner and count towards its load; only the others
 * are placed again. Ties go to the smaller partition id and to the executor first in
 * [[ExecutorOrder]], so every placement of the same inputs is the same.
 */
private[spark] object BalancedPlacement {

  /**
   * @param predicted predicted bytes of each reduce partition
   * @param pinned owners that stay, by partition
   * @param executors where partitions may go (non-empty)
   * @return the owner of every partition
   */
  def place(
      predicted: Array[Double],
      pinned: collection.Map[Int, String],
      executors: Seq[String]): Array[String] = {
    require(executors.nonEmpty, "no executor to place partitions on")
    val rank = executors.sorted(ExecutorOrder.ordering).zipWithIndex.toMap
    val load = mutable.HashMap.empty[String, Double] ++= executors.map(_ -> 0.0)
    val owners = new Array[String](predicted.length)
    pinned.foreach {
      case (p, owner) if load.contains(owner) =>
        owners(p) = owner
        load(owner) += predicted(p)
      case _ =>
    }
    val free = mutable.PriorityQueue.empty[(Double, Int, String)](
      Ordering.by[(Double, Int, String), (Double, Int)](e => (-e._1, -e._2)))
    load.foreach { case (id, bytes) => free.enqueue((bytes, rank(id), id)) }
    predicted.indices.filter(owners(_) == null).sortBy(p => (-predicted(p), p)).foreach { p =>
      val (bytes, r, id) = free.dequeue()
      owners(p) = id
      free.enqueue((bytes + predicted(p), r, id))
    }
    owners
  }
}
