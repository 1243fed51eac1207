package org.apache.spark.shuffle.adaptive.push.driver

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

class OwnerReadsSuite extends AnyFunSuite {

  private def reduceTask(bytes: Long, fromChunks: Long, atOwner: Long, onOwner: Boolean) = {
    val counters = new FetchCounters
    counters.add(FetchCounters.ReduceTasks, 1)
    counters.add(FetchCounters.BytesByTransport, "netty", bytes)
    if (fromChunks > 0) counters.add(FetchCounters.StoredReduceTasks, 1)
    if (onOwner) counters.add(FetchCounters.StoredReduceTasksOnOwner, 1)
    counters.add(FetchCounters.BytesFromStores, fromChunks)
    counters.add(FetchCounters.BytesAtOwner, atOwner)
    counters
  }

  test("each shuffle's reduce tasks add up where they ran against what they read merged") {
    val reads = new OwnerReads
    reads.add(3, reduceTask(bytes = 100, fromChunks = 80, atOwner = 70, onOwner = true))
    reads.add(3, reduceTask(bytes = 50, fromChunks = 20, atOwner = 0, onOwner = false))
    reads.add(3, new FetchCounters) // a map task's: no read
    reads.add(4, reduceTask(bytes = 10, fromChunks = 0, atOwner = 0, onOwner = false))
    // Shuffle 4 read nothing merged: it has nothing to say of owners.
    assert(
      reads.snapshot() === Map(
        3 -> Map(
          "reduce_tasks" -> 2L,
          "reduce_tasks_reading_chunks" -> 2L,
          "reduce_tasks_at_owner" -> 1L,
          "bytes_read" -> 150L,
          "bytes_from_chunks" -> 100L,
          "bytes_at_owner" -> 70L)))
  }
}
