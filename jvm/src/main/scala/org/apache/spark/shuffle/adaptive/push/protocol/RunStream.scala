package org.apache.spark.shuffle.adaptive.push.protocol

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.BlockUploads

/**
 * Receives a run of a map output's blocks that another executor streams here ([[RunUpload]]: a
 * header with the size of each of its `partitions`, then their bytes). Once the header
 * arrived the run's bytes are reserved in `memory` (the stream fails if they do not fit) and land
 * in one direct buffer; `complete` then gets the sizes and the buffer and answers how many of its
 * bytes it keeps (the rest are released). A failed stream releases what it reserved.
 *
 * A run that does not fit fails its stream ([[RunStream.Fail]]). Spark's block server closes the
 * connection of a stream that fails while its bytes arrive, failing every other transfer on it,
 * so a receiver may instead read and drop the bytes, and then either succeed
 * ([[RunStream.Drop]]: a push, whose readers learn from the owner what it merged) or answer
 * that it keeps none of them ([[RunStream.Refuse]]: a sender that tries elsewhere, told by
 * [[BlockUploads.Refused]]; an answer, not a failure, so that no side logs an error for an
 * outcome the protocol expects). `reserve` is how bytes are reserved in `memory` (a receiver may
 * make room first). `complete` answers the bytes it keeps: none refuses the run where the
 * sender is told; throwing fails the upload, nothing is kept.
 */
private[push] final class RunStream(
    message: BlockMessage,
    partitions: Int,
    memory: MemoryBound,
    reserve: Long => Boolean,
    complete: (Array[Long], ByteBuffer) => Long,
    whenFull: RunStream.WhenFull = RunStream.Fail)
    extends StreamCallbackWithID {

  private[this] var header = ByteBuffer.allocate(RunUpload.headerLength(partitions))
  private[this] var sizes: Array[Long] = _
  private[this] var data: ByteBuffer = _
  private[this] var reserved = 0L
  private[this] var dropping = false
  private[this] var refused = false

  override def getID: String = message.blockId.name

  private[this] def name = message.toString

  override def onData(streamId: String, piece: ByteBuffer): Unit = {
    if (data == null && !dropping) {
      val take = math.min(header.remaining, piece.remaining)
      header.put(piece.duplicate().limit(piece.position() + take))
      piece.position(piece.position() + take)
      if (!header.hasRemaining) start(RunUpload.sizesOf(header.flip(), partitions))
    }
    if (dropping) {
      piece.position(piece.limit())
    } else if (piece.hasRemaining) {
      if (data == null || piece.remaining > data.remaining) {
        throw new IOException(s"$name: more bytes than its header announced")
      }
      data.put(piece)
    }
  }

  private def start(announced: Array[Long]): Unit = {
    val total = announced.sum
    if (total > Int.MaxValue || !reserve(total)) {
      if (whenFull != RunStream.Fail) {
        dropping = true
        header = null
        return
      }
      throw new IOException(
        s"$name ($total bytes) does not fit the shuffle store: ${memory.used} of " +
          s"${memory.capacity} bytes used")
    }
    reserved = total
    sizes = announced
    data = ByteBuffer.allocateDirect(total.toInt)
    header = null
  }

  override def onComplete(streamId: String): Unit = if (dropping) {
    refused = whenFull == RunStream.Refuse
  } else {
    if (data == null || data.hasRemaining) {
      throw new IOException(s"$name ended before the bytes its header announced")
    }
    data.flip()
    val kept =
      try complete(sizes, data)
      catch {
        case e: Throwable =>
          memory.release(reserved)
          reserved = 0
          throw e
      }
    memory.release(reserved - kept)
    reserved = 0
    refused = kept == 0 && whenFull == RunStream.Refuse
  }

  override def getCompletionResponse(): ByteBuffer =
    if (refused) BlockUploads.Refused else BlockUploads.Kept

  override def onFailure(streamId: String, cause: Throwable): Unit = {
    memory.release(reserved)
    reserved = 0
    data = null
  }
}

private[push] object RunStream {
  sealed trait WhenFull
  case object Fail extends WhenFull
  case object Drop extends WhenFull
  case object Refuse extends WhenFull
}
