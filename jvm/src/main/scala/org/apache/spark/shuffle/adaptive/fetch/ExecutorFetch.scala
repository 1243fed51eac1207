package org.apache.spark.shuffle.adaptive.fetch

import java.io.InputStream

import org.apache.spark.storage.BlockId
import org.apache.spark.util.Clock
import org.apache.spark.shuffle.adaptive.flow.{FetchBudget, FlowSettings, PeerTraffic}

/**
 * What a reduce task's fetcher reads of its executor, the same for every task there: its own
 * blocks, its flow settings, the in-flight bytes and rates of every source as all its tasks see
 * them, its direct-memory back-off, how a block's stream is decrypted and decompressed
 * (`streamWrapper`), its clock, and the fetch budget all its tasks share (none: each task keeps
 * to its own limit only).
 */
private[spark] final case class ExecutorFetch(
    local: LocalBlocks,
    settings: FlowSettings,
    traffic: PeerTraffic,
    backoff: DirectMemoryBackoff,
    streamWrapper: (BlockId, InputStream) => InputStream,
    clock: Clock,
    budget: Option[FetchBudget] = None)
