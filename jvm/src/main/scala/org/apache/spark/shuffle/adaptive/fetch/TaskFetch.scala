package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.ElasticLimit
import org.apache.spark.shuffle.adaptive.transport.BlockTransport

/**
 * What one reduce task fetches, and how: what to ask of each source (`requests`, blocks of map
 * outputs and requests that stand for several, in the order to ask for them), through
 * `transport`, within its own `elastic` limit.
 */
private[spark] final case class TaskFetch(
    transport: BlockTransport,
    requests: Seq[(BlockManagerId, IndexedSeq[FetchItem])],
    elastic: ElasticLimit)
