package org.apache.spark.shuffle.adaptive.protocol

import java.nio.ByteBuffer

import scala.concurrent.{Future, Promise}
import scala.util.Try

import org.apache.spark.SparkEnv
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.BlockFetchingListener
import org.apache.spark.storage.BlockManagerId

/**
 * A question to another executor (a layout, a summary, its room), fetched as a block through
 * Spark's block transfer service: the answer is small, so it is decoded from memory.
 */
private[spark] object Ask {

  def apply[T](env: SparkEnv, address: BlockManagerId, request: BlockMessage.Request)(
      decode: ByteBuffer => T): Future[T] = {
    val answer = Promise[T]()
    env.blockManager.blockStoreClient.fetchBlocks(
      address.host,
      address.port,
      address.executorId,
      Array(request.blockId.name),
      new BlockFetchingListener {
        override def onBlockFetchSuccess(blockId: String, data: ManagedBuffer): Unit =
          answer.complete(Try(decode(data.nioByteBuffer())))
        override def onBlockFetchFailure(blockId: String, e: Throwable): Unit =
          answer.tryFailure(e)
      },
      null)
    answer.future
  }
}
