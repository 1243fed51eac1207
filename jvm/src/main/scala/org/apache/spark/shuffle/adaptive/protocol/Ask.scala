package org.apache.spark.shuffle.adaptive.protocol

import java.nio.ByteBuffer

import scala.concurrent.{Await, Future, Promise}
import scala.concurrent.duration.{Duration, FiniteDuration}
import scala.util.{Failure, Try}
import scala.util.control.NonFatal

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

  /**
   * The answers of questions asked at once, each within one deadline `timeout` from now: an
   * executor that does not answer costs the asker `timeout` once, not once per question left.
   */
  def all[K, T](asked: Seq[(K, Future[T])], timeout: FiniteDuration): Seq[(K, Try[T])] = {
    val deadline = timeout.fromNow
    asked.map { case (key, answer) =>
      key -> (try Try(Await.result(answer, deadline.timeLeft.max(Duration.Zero)))
      catch { case NonFatal(e) => Failure(e) })
    }
  }
}
