package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.storage.BlockId

/** One shuffle block as the map output tracker describes it. */
private[spark] final case class BlockRef(blockId: BlockId, size: Long, mapIndex: Int)
