package org.apache.spark.shuffle.adaptive.push.reduce

import org.apache.spark.scheduler.ExecutorCacheTaskLocation
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

/**
 * Where a reduce task of a push shuffle should run: at the owner that merged its partitions
 * (iShuffle's second half), so that what was pushed during the map stage is read from memory on
 * the task's own executor instead of crossing the network again. Spark parses the location into
 * a process-local one, which it honours within `spark.locality.wait`.
 */
private[spark] object ReduceLocations {

  /**
   * The preferred location of a task that reads partitions `[start, end)` whole: the live owner
   * of most of their bytes in `table` (`bytes`, per partition, is asked only when the range spans
   * several owners); none when no live owner holds any of them.
   */
  def of(table: OwnerTable, start: Int, end: Int, bytes: => Int => Long): Seq[String] = {
    val owners = table.ranges(start, end)
    val chosen =
      if (owners.size <= 1) owners.headOption
      else {
        val sizes = bytes
        Some(owners.maxBy { case (_, from, until) => (from until until).iterator.map(sizes).sum })
      }
    chosen.map { case (owner, _, _) => location(owner.host, owner.executorId) }.toSeq
  }

  private def location(host: String, executorId: String): String =
    ExecutorCacheTaskLocation(host, executorId).toString
}
