package org.apache.spark.shuffle.adaptive.store

import java.io.{File, IOException}
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.file.StandardOpenOption
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.ShuffleBlockId

/**
 * One executor's bounded in-memory shuffle store (mode=store): map-output blocks in direct
 * memory, never more than `capacity` bytes (each block's bytes are reserved before they are
 * copied in). Blocks arrive from this executor's map tasks ([[putFromFile]]) or from other
 * executors' ([[receive]], through Spark's block upload); they leave when their shuffle is
 * unregistered ([[removeShuffle]]) or the executor stops. The memory itself is returned by the
 * JVM once no reader holds a view of it. `onChange` is told the usage after every change.
 * Thread-safe.
 */
private[spark] final class ShuffleStore(val capacity: Long, onChange: ShuffleStore => Unit) {

  private[this] val blocks = new ConcurrentHashMap[ShuffleBlockId, StoredBlock]
  private[this] val usedBytes = new AtomicLong
  private[this] val highWaterBytes = new AtomicLong
  private[this] val receivedBytes = new AtomicLong

  def used: Long = usedBytes.get
  def highWater: Long = highWaterBytes.get
  /** Bytes that arrived from other executors (their remote-memory spill). */
  def received: Long = receivedBytes.get

  def get(id: ShuffleBlockId): Option[ManagedBuffer] = Option(blocks.get(id)).map(_.buffer)

  def contains(id: ShuffleBlockId): Boolean = blocks.containsKey(id)

  /** Copies `length` bytes of `file` from `offset` in; false (nothing held) if they do not fit. */
  def putFromFile(id: ShuffleBlockId, file: File, offset: Long, length: Long): Boolean = {
    require(length <= Int.MaxValue, s"$id: $length bytes do not fit one buffer")
    if (!reserve(length)) return false
    try {
      val buffer = ByteBuffer.allocateDirect(length.toInt)
      val channel = FileChannel.open(file.toPath, StandardOpenOption.READ)
      try {
        while (buffer.hasRemaining) {
          if (channel.read(buffer, offset + buffer.position()) < 0) {
            throw new IOException(s"$file ended before ${offset + length} bytes")
          }
        }
      } finally channel.close()
      buffer.flip()
      add(id, new StoredBlock(IndexedSeq(buffer)), received = false)
      true
    } catch {
      case e: Throwable =>
        unreserve(length)
        throw e
    }
  }

  /**
   * Takes a block streamed from another executor: each piece is reserved as it arrives, and the
   * stream fails (releasing what it took) when one does not fit.
   */
  def receive(id: ShuffleBlockId): StreamCallbackWithID = new StreamCallbackWithID {
    private[this] val chunks = mutable.ArrayBuffer.empty[ByteBuffer]
    private[this] var reserved = 0L

    override def getID: String = id.name

    override def onData(streamId: String, data: ByteBuffer): Unit = {
      val length = data.remaining
      if (!reserve(length)) {
        throw new IOException(s"$id does not fit the shuffle store: $used of $capacity " +
          s"bytes used, $length more arrived")
      }
      reserved += length
      chunks += ByteBuffer.allocateDirect(length).put(data).flip()
    }

    override def onComplete(streamId: String): Unit = {
      add(id, new StoredBlock(chunks.toIndexedSeq), received = true)
      reserved = 0
    }

    override def onFailure(streamId: String, cause: Throwable): Unit = {
      unreserve(reserved)
      reserved = 0
      chunks.clear()
    }
  }

  def removeShuffle(shuffleId: Int): Unit = {
    val gone = blocks.keySet.asScala.filter(_.shuffleId == shuffleId).toList
    gone.foreach(id => Option(blocks.remove(id)).foreach(b => unreserve(b.size)))
    if (gone.nonEmpty) onChange(this)
  }

  def clear(): Unit = blocks.keySet.asScala.map(_.shuffleId).toSet.foreach(removeShuffle)

  private def reserve(bytes: Long): Boolean = {
    var done = false
    var fits = true
    while (!done) {
      val current = usedBytes.get
      if (current + bytes > capacity) {
        fits = false
        done = true
      } else if (usedBytes.compareAndSet(current, current + bytes)) {
        highWaterBytes.accumulateAndGet(current + bytes, math.max)
        done = true
      }
    }
    fits
  }

  private def unreserve(bytes: Long): Unit = usedBytes.addAndGet(-bytes)

  private def add(id: ShuffleBlockId, block: StoredBlock, received: Boolean): Unit = {
    // A block placed twice (a retried upload) keeps the first copy.
    if (blocks.putIfAbsent(id, block) != null) unreserve(block.size)
    else if (received) receivedBytes.addAndGet(block.size)
    onChange(this)
  }
}
