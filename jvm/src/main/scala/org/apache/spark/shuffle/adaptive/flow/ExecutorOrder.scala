package org.apache.spark.shuffle.adaptive.flow

/**
 * The circular order of executors every executor agrees on without talking: by executor id,
 * numeric ids numerically (so "10" follows "9"), then the others by name.
 */
private[spark] object ExecutorOrder {

  val ordering: Ordering[String] = Ordering.by { (id: String) =>
    id.toLongOption match {
      case Some(n) => (0, n, id)
      case None => (1, 0L, id)
    }
  }

  /**
   * Sorts `others` by how far they follow `self` going round the circle: the closest successor
   * first, wrapping past the largest id to the smallest.
   */
  def successors(self: String, others: Seq[String]): Seq[String] = {
    val (after, before) = others.sorted(ordering).partition(ordering.gt(_, self))
    after ++ before
  }
}
