package org.apache.spark.shuffle.adaptive.store

import java.io.{File, IOException}
import java.nio.ByteBuffer
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.{ShuffleBlockBatchId, ShuffleBlockId}

/**
 * One executor's bounded in-memory shuffle store (mode=store): map-output blocks in direct
 * memory, never more than `capacity` bytes (each block's bytes are reserved before they are
 * copied in). Blocks arrive from this executor's map tasks ([[putFromFile]]) or from other
 * executors' ([[receiveRun]], through Spark's block upload); they leave when their shuffle is
 * unregistered ([[removeShuffle]]; later arrivals of that shuffle are refused, as pushes may
 * still be under way) or the executor stops. The memory itself is returned by the
 * JVM once no reader holds a view of it. `onChange` is told the usage after every change.
 * Thread-safe.
 */
private[spark] final class ShuffleStore(
    val capacity: Long,
    onChange: ShuffleStore => Unit,
    onRun: (ShuffleBlockBatchId, ByteBuffer, Array[Long]) => Unit = (_, _, _) => ()) {

  private[this] val blocks = new ConcurrentHashMap[ShuffleBlockId, StoredBlock]
  private[this] val usedBytes = new AtomicLong
  private[this] val highWaterBytes = new AtomicLong
  private[this] val receivedBytes = new AtomicLong
  private[this] val removedShuffles = ConcurrentHashMap.newKeySet[Integer]()

  def used: Long = usedBytes.get
  def highWater: Long = highWaterBytes.get

  /** Bytes that arrived from other executors (their remote-memory spill). */
  def received: Long = receivedBytes.get

  def get(id: ShuffleBlockId): Option[ManagedBuffer] = Option(blocks.get(id)).map(_.buffer)

  def contains(id: ShuffleBlockId): Boolean = blocks.containsKey(id)

  /**
   * Copies `length` bytes of `file` from `offset` in; false (nothing new held) if they do not
   * fit, the block is held already or its shuffle was removed.
   */
  def putFromFile(id: ShuffleBlockId, file: File, offset: Long, length: Long): Boolean = {
    require(length <= Int.MaxValue, s"$id: $length bytes do not fit one buffer")
    if (!reserve(length)) return false
    try {
      val buffer = ByteBuffer.allocateDirect(length.toInt)
      RunUpload.readFully(file, offset, buffer)
      buffer.flip()
      add(id, new StoredBlock(buffer), received = false)
    } catch {
      case e: Throwable =>
        unreserve(length)
        throw e
    }
  }

  /**
   * Takes a run of blocks another executor streams here ([[RunUpload]]: a header with each
   * block's size, then their bytes): once the header arrived, the run's bytes are reserved at
   * once (the stream fails if they do not fit) and land in one buffer, each block a slice of it.
   * `onRun` then hears of the buffer, with offsets as the map output's index would give them
   * (blocks outside the run empty).
   */
  def receiveRun(id: ShuffleBlockBatchId): StreamCallbackWithID = new StreamCallbackWithID {
    private[this] val expected = id.endReduceId - id.startReduceId
    private[this] var header = ByteBuffer.allocate(RunUpload.headerLength(expected))
    private[this] var sizes: Array[Long] = _
    private[this] var data: ByteBuffer = _
    private[this] var reserved = 0L

    override def getID: String = id.name

    override def onData(streamId: String, piece: ByteBuffer): Unit = {
      if (data == null) {
        val take = math.min(header.remaining, piece.remaining)
        header.put(piece.duplicate().limit(piece.position() + take))
        piece.position(piece.position() + take)
        if (!header.hasRemaining) start(RunUpload.sizesOf(header.flip(), expected))
      }
      if (piece.hasRemaining) {
        if (data == null || piece.remaining > data.remaining) {
          throw new IOException(s"$id: more bytes than its header announced")
        }
        data.put(piece)
      }
    }

    private def start(announced: Array[Long]): Unit = {
      val total = announced.sum
      if (total > Int.MaxValue || !reserve(total)) {
        throw new IOException(
          s"$id ($total bytes) does not fit the shuffle store: $used of " +
            s"$capacity bytes used")
      }
      reserved = total
      sizes = announced
      data = ByteBuffer.allocateDirect(total.toInt)
      header = null
    }

    override def onComplete(streamId: String): Unit = {
      if (data == null || data.hasRemaining) {
        throw new IOException(s"$id ended before the bytes its header announced")
      }
      data.flip()
      val offsets = sizes.scanLeft(0L)(_ + _)
      var added = true
      sizes.indices.filter(sizes(_) > 0).foreach { i =>
        val slice = data.duplicate().position(offsets(i).toInt).limit(offsets(i + 1).toInt).slice()
        added &= add(
          ShuffleBlockId(id.shuffleId, id.mapId, id.startReduceId + i),
          new StoredBlock(slice),
          received = true)
      }
      reserved = 0
      // Only a run whose blocks are all new here is offered: a repeated upload adds nothing.
      if (added) onRun(id, data, Array.fill(id.startReduceId)(0L) ++ offsets)
    }

    override def onFailure(streamId: String, cause: Throwable): Unit = {
      unreserve(reserved)
      reserved = 0
      data = null
    }
  }

  def removeShuffle(shuffleId: Int): Unit = {
    removedShuffles.add(shuffleId)
    val gone = blocks.keySet.asScala.filter(_.shuffleId == shuffleId).toList
    gone.foreach(id => Option(blocks.remove(id)).foreach(b => unreserve(b.size)))
    if (gone.nonEmpty) onChange(this)
  }

  def clear(): Unit = blocks.keySet.asScala.map(_.shuffleId).toSet.foreach(removeShuffle)

  def isRemoved(shuffleId: Int): Boolean = removedShuffles.contains(shuffleId)

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

  /**
   * False if the store held the block already (a retried upload: it keeps the first copy) or its
   * shuffle was removed.
   */
  private def add(id: ShuffleBlockId, block: StoredBlock, received: Boolean): Boolean = {
    var added = !isRemoved(id.shuffleId) && blocks.putIfAbsent(id, block) == null
    // removeShuffle marks before it empties: either it saw this block, or this sees the mark.
    if (added && isRemoved(id.shuffleId)) added = !blocks.remove(id, block)
    if (!added) unreserve(block.size)
    else if (received) receivedBytes.addAndGet(block.size)
    onChange(this)
    added
  }
}
