package org.apache.spark.shuffle.adaptive.push.driver

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.ExecutorOrder
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

/** The driver's arithmetic of owner tables: where partitions go, and what each owner then holds. */
private[spark] object TableArithmetic {

  /**
   * Balanced contiguous placement of `predicted` partition sizes on `executors` (in
   * [[ExecutorOrder]]): each owner's range closes once it holds its share of what is left to
   * place, so every owner gets at least one partition while there are as many partitions as
   * owners, and a partition larger than a share is an owner's alone.
   */
  def balanced(predicted: Array[Double], executors: Seq[BlockManagerId]): OwnerTable = {
    val numPartitions = predicted.length
    val inOrder = executors.distinct.sortBy(_.executorId)(ExecutorOrder.ordering)
    val count = math.min(inOrder.size, numPartitions)
    if (count == 0) return OwnerTable.empty(numPartitions)
    val firsts = Array.newBuilder[Int]
    var next = 0
    var left = predicted.sum
    (0 until count).foreach { k =>
      firsts += next
      val owners = count - k
      // Leave at least one partition for each owner still to come.
      val last = numPartitions - (owners - 1)
      val share = left / owners
      var held = predicted(next)
      next += 1
      while (next < last && held + predicted(next) / 2 < share) {
        held += predicted(next)
        next += 1
      }
      left -= held
    }
    OwnerTable(numPartitions, inOrder.take(count).toVector, firsts.result().toVector)
  }

  /** With nothing known of the sizes: equal ranges. */
  def uniform(numPartitions: Int, executors: Seq[BlockManagerId]): OwnerTable =
    balanced(Array.fill(numPartitions)(1.0), executors)

  /** The most bytes of `sizes` (one per partition) that one owner's range of `table` holds. */
  def maxLoad(table: OwnerTable, sizes: Array[Double]): Double =
    if (table.isEmpty) 0.0 else table.owners.indices.map(heldBy(table, _, sizes).sum).max

  /**
   * The bytes of `sizes` that the owners of partitions larger than an even share hold besides
   * them: reduce work on the executors whose one partition already bounds the stage. Reduce tasks
   * run at their owners in partition order, so this work delays the large partition's task and
   * shares its owner's link.
   */
  def besideOversized(table: OwnerTable, sizes: Array[Double]): Double = {
    val share = sizes.sum / math.max(1, table.owners.size)
    table.owners.indices.iterator.map { k =>
      val held = heldBy(table, k, sizes)
      if (held.nonEmpty && held.max > share) held.sum - held.max else 0.0
    }.sum
  }

  private def heldBy(table: OwnerTable, k: Int, sizes: Array[Double]): IndexedSeq[Double] =
    table.partitionsOf(k).map(sizes)
}
