package org.apache.spark.shuffle.adaptive.store

import java.io.File
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
  private[this] val memory = new StoreMemory(capacity)
  private[this] val receivedBytes = new AtomicLong
  private[this] val removedShuffles = ConcurrentHashMap.newKeySet[Integer]()

  def used: Long = memory.used
  def highWater: Long = memory.highWater

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
    if (!memory.reserve(length)) return false
    val added =
      try {
        val buffer = ByteBuffer.allocateDirect(length.toInt)
        RunUpload.readFully(file, offset, buffer)
        buffer.flip()
        add(id, buffer)
      } catch {
        case e: Throwable =>
          memory.release(length)
          throw e
      }
    if (!added) memory.release(length)
    added
  }

  /**
   * Takes a run of blocks another executor streams here ([[RunStream]]): each block a slice of
   * the run's buffer. `onRun` then hears of the buffer, with offsets as the map output's index
   * would give them (blocks outside the run empty).
   */
  def receiveRun(id: ShuffleBlockBatchId): StreamCallbackWithID =
    new RunStream(
      id,
      memory,
      memory.reserve,
      (sizes, data) => {
        val offsets = sizes.scanLeft(0L)(_ + _)
        var kept = 0L
        sizes.indices.filter(sizes(_) > 0).foreach { i =>
          val slice =
            data.duplicate().position(offsets(i).toInt).limit(offsets(i + 1).toInt).slice()
          if (add(ShuffleBlockId(id.shuffleId, id.mapId, id.startReduceId + i), slice)) {
            kept += sizes(i)
          }
        }
        receivedBytes.addAndGet(kept)
        // Only a run whose blocks are all new here is offered: a repeated upload adds nothing.
        if (kept == sizes.sum) onRun(id, data, Array.fill(id.startReduceId)(0L) ++ offsets)
        kept
      })

  def removeShuffle(shuffleId: Int): Unit = {
    removedShuffles.add(shuffleId)
    val gone = blocks.keySet.asScala.filter(_.shuffleId == shuffleId).toList
    gone.foreach(id => Option(blocks.remove(id)).foreach(b => memory.release(b.size)))
    if (gone.nonEmpty) onChange(this)
  }

  def clear(): Unit = blocks.keySet.asScala.map(_.shuffleId).toSet.foreach(removeShuffle)

  def isRemoved(shuffleId: Int): Boolean = removedShuffles.contains(shuffleId)

  /**
   * False if the store held the block already (a retried upload: it keeps the first copy) or its
   * shuffle was removed.
   */
  private def add(id: ShuffleBlockId, bytes: ByteBuffer): Boolean = {
    val block = new StoredBlock(bytes)
    var added = !isRemoved(id.shuffleId) && blocks.putIfAbsent(id, block) == null
    // removeShuffle marks before it empties: either it saw this block, or this sees the mark.
    if (added && isRemoved(id.shuffleId)) added = !blocks.remove(id, block)
    onChange(this)
    added
  }
}
