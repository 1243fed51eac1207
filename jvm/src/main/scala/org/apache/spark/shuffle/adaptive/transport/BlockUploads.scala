package org.apache.spark.shuffle.adaptive.transport

import java.io.IOException
import java.nio.ByteBuffer

import scala.concurrent.{Future, Promise}
import scala.reflect.ClassTag

import org.apache.spark.SparkEnv
import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.{RpcResponseCallback, TransportClientFactory}
import org.apache.spark.network.shuffle.BlockStoreClient
import org.apache.spark.network.shuffle.protocol.UploadBlockStream
import org.apache.spark.network.util.JavaUtils
import org.apache.spark.storage.{BlockId, StorageLevel}

/**
 * Uploads a block as a stream to another executor's block server, as Spark's
 * `NettyBlockTransferService.uploadBlock` does (the same message, so the same server code, the
 * same authentication and encryption), with one difference: a receiver may answer that it read
 * the block and keeps none of it ([[BlockUploads.Refused]]), and the upload then fails with
 * [[BlockUploads.RefusedUpload]]. A store that is full or already holds the block is an answer
 * the plugin expects and acts on, not an error: failed as a stream, it would be logged by
 * Spark's uploader as an ERROR carrying the receiver's stack.
 */
private[spark] object BlockUploads {

  /** What a receiver that keeps nothing of an upload answers. */
  def Refused: ByteBuffer = ByteBuffer.wrap(Array[Byte](1))

  /** What a receiver that keeps an upload answers. */
  def Kept: ByteBuffer = ByteBuffer.allocate(0)

  final class RefusedUpload(message: String) extends IOException(message)

  // Spark's uploader keeps its client factory to itself; the field is the block store client's.
  private lazy val clientFactoryField = {
    val field = classOf[BlockStoreClient].getDeclaredField("clientFactory")
    field.setAccessible(true)
    field
  }

  def upload(
      env: SparkEnv,
      host: String,
      port: Int,
      id: BlockId,
      data: ManagedBuffer): Future[Unit] = {
    val factory = clientFactoryField
      .get(env.blockManager.blockTransferService)
      .asInstanceOf[TransportClientFactory]
    val client = factory.createClient(host, port)
    // Serialized as the receiving block server deserializes it (Spark's uploader does the same).
    val serializer = env.serializerManager.getSerializer(ClassTag.Any, false)
    val metadata = JavaUtils.bufferToArray(
      serializer.newInstance().serialize((StorageLevel.OFF_HEAP, ClassTag.Byte)))
    val header = new UploadBlockStream(id.name, metadata).toByteBuffer
    val done = Promise[Unit]()
    client.uploadStream(new NioManagedBuffer(header), data, answered(done, s"$host:$port", id))
    done.future
  }

  /**
   * Completes `done` with the first answer `peer` gives for `id`. Spark's client may call back
   * twice for one upload (the peer answered, then writing the rest of the stream failed): a
   * second answer changes nothing, and nothing is thrown into Netty's event loop.
   */
  def answered(done: Promise[Unit], peer: String, id: BlockId): RpcResponseCallback =
    new RpcResponseCallback {
      override def onSuccess(response: ByteBuffer): Unit =
        if (response.remaining() > 0 && response.get(response.position()) == 1) {
          done.tryFailure(new RefusedUpload(s"$peer keeps none of $id"))
        } else done.trySuccess(())
      override def onFailure(e: Throwable): Unit = done.tryFailure(e)
    }
}
