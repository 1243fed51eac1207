package org.apache.spark.shuffle.adaptive.dummy

import org.apache.spark.SparkContext

/**
 * A placement of a shuffle's tasks that every shuffle manager gets the same of, so that a
 * comparison moves the same bytes over the same links: map partition i runs on executor
 * i mod n, reduce partition r on executor (hot + r) mod n, the executors ordered by host (its
 * address numerically) and then id. Reduce partition 0 is the DummyRDD's hottest destination,
 * so `hot` chooses which executor's link the skewed partition loads.
 */
private[spark] final case class PinnedPlacement(executors: IndexedSeq[String], hot: Int) {
  require(executors.nonEmpty, "no executors to pin tasks to")
  require(
    hot >= 0 && hot < executors.size,
    s"the hot reduce partition's executor must be between 1 and ${executors.size}, got ${hot + 1}")

  def mapLocations: IndexedSeq[String] = executors

  def reduceLocations: IndexedSeq[String] =
    executors.indices.map(r => executors((hot + r) % executors.size))
}

private[spark] object PinnedPlacement {

  /**
   * The `expected` executors of `sc` (waited for up to `timeoutMs`), as task locations in host
   * order; `hotPosition` counts from 1 in that order.
   */
  def of(
      sc: SparkContext,
      expected: Int,
      hotPosition: Int,
      timeoutMs: Long = 120000): PinnedPlacement = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    def registered = sc.env.blockManager.master.getMemoryStatus.keys.filter(!_.isDriver).toSeq
    var found = registered
    while (found.size < expected && System.nanoTime() < deadline) {
      Thread.sleep(100) // polling the driver's block manager registry; there is no event to await
      found = registered
    }
    require(
      found.size >= expected,
      s"only ${found.size} of $expected executors registered within $timeoutMs ms")
    val ordered = found.sortBy { id =>
      (hostKey(id.host), id.executorId.toLongOption.getOrElse(Long.MaxValue), id.executorId)
    }
    PinnedPlacement(
      ordered.map(id => s"executor_${id.host}_${id.executorId}").toIndexedSeq,
      hotPosition - 1)
  }

  /** An address's parts compared as numbers where they are (10.0.0.9 before 10.0.0.10). */
  private def hostKey(host: String): String =
    host.split('.').map(p => p.toIntOption.fold(p)(n => f"$n%010d")).mkString(".")
}
