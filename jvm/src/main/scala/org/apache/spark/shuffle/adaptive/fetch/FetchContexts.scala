package org.apache.spark.shuffle.adaptive.fetch

import java.io.InputStream

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.Clock
import org.apache.spark.shuffle.adaptive.flow.{ElasticLimit, FetchBudget, FlowSettings, PeerTraffic}
import org.apache.spark.shuffle.adaptive.transport.BlockTransport

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

/**
 * What one reduce task fetches, and how: the blocks of each source (`byAddress`: id, size, map
 * index), through `transport`, within its own `elastic` limit; `bundles`, requests read
 * whole and cut into blocks (merged chunks, combined records); whether each map's blocks are
 * asked for as one batch block, and whether a bundle's blocks may reach the task as one stream
 * (`concatenate`).
 */
private[spark] final case class TaskFetch(
    transport: BlockTransport,
    byAddress: Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])],
    elastic: ElasticLimit,
    bundles: Map[(BlockManagerId, BlockId), BundledRead],
    batch: Boolean,
    concatenate: Boolean)
