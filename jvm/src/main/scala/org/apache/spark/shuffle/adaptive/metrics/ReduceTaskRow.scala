package org.apache.spark.shuffle.adaptive.metrics

/**
 * One reduce task of a [[ShuffleReadReport]]: the reduce partitions it read
 * (`[startPartition, endPartition)`), where and when it ran (epoch ms), the bytes it read, how
 * long it waited for remote blocks, and its in-flight limit (smallest, largest, and averaged
 * over its fetch time).
 */
private[metrics] final case class ReduceTaskRow(
    startPartition: Int,
    endPartition: Int,
    executorId: String,
    launchTime: Long,
    finishTime: Long,
    bytes: Long,
    fetchWaitMs: Long,
    limitMin: Long,
    limitMax: Long,
    limitMean: Double)
