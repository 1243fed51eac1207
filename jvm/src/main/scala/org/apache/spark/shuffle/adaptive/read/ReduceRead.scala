package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/**
 * A reduce task's read of shuffle `shuffleId`: map outputs `[startMapIndex, endMapIndex)`,
 * partitions `[startPartition, endPartition)`, and the task's `counters`.
 */
private[spark] final case class ReduceRead(
    shuffleId: Int,
    startMapIndex: Int,
    endMapIndex: Int,
    startPartition: Int,
    endPartition: Int,
    counters: FetchCounters)
