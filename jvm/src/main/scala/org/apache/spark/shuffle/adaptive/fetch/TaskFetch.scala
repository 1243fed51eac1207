package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.flow.ElasticLimit
import org.apache.spark.shuffle.adaptive.transport.BlockTransport

/**
 * What one reduce task fetches, and how: the blocks of each source (`byAddress`: id, size, map
 * index), through `transport`, within its own `elastic` limit; among them the `composite`
 * requests, each of which stands for several blocks and serves what it holds itself; and
 * whether each map's blocks are asked for as one batch block.
 */
private[spark] final case class TaskFetch(
    transport: BlockTransport,
    byAddress: Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])],
    elastic: ElasticLimit,
    composite: CompositeRequests,
    batch: Boolean)
