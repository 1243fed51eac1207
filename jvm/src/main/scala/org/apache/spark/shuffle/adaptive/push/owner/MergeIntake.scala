package org.apache.spark.shuffle.adaptive.push.owner

import java.io.File
import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentLinkedQueue, Executor, RejectedExecutionException}
import java.util.concurrent.atomic.LongAdder

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.StorageUtils
import org.apache.spark.shuffle.adaptive.memory.MemoryGrant
import org.apache.spark.shuffle.adaptive.push.protocol.{PushedRun, RunStream, RunUpload}

/**
 * How runs of map outputs come into an owner's merge store. Blocks arrive as runs of one map
 * output (a run this executor's pusher reads from its own file, [[appendFromFile]], or one
 * another executor streams here, [[receiveRun]]); each block kept is copied into its
 * partition's open chunk, and a chunk is closed once it holds `chunkSize` bytes (a block larger
 * than that is a chunk of its own), so a reduce task reads a partition as a few large chunks
 * instead of a block per map output. A map output already merged into a partition is not
 * appended again (a retried or speculative map task), nor is anything into a sealed partition.
 *
 * A run another executor pushed is merged on `merging` once it arrived, its bytes reserved until
 * then: a thread below the tasks' priority takes that copy off the block server's event loop,
 * which runs at theirs (without one, on the receiving thread). [[ChunkServing]] merges whatever
 * still waits ([[mergeWaiting]]) before a layout or a summary.
 *
 * Locks: appending holds the shuffle's monitor; the runs waiting are merged by one thread at a
 * time, under `mergingNow`, so that a layout that finds none waiting never seals while another
 * thread merges the last one it took.
 */
private[owner] final class MergeIntake private[owner] (
    policy: MemoryPolicy,
    shuffles: StoreShuffles,
    chunkSize: Long,
    merging: Option[Executor],
    changed: () => Unit)
    extends Logging {

  private[this] val memory = policy.memory
  private[this] val waiting = new ConcurrentLinkedQueue[() => Unit]
  private[this] val mergingNow = new Object
  private[this] val late = new LongAdder

  /**
   * Bytes of blocks that arrived after a reduce task sealed their partition: pushed once the map
   * stage had ended, too late for their reduce task, which read them from their files.
   */
  def bytesLate: Long = late.sum

  /**
   * Merges the blocks of map output `mapId` for partitions `first` to `first + sizes.length - 1`
   * (`sizes` of them, empty ones included), back to back in `data`, a direct buffer whose bytes
   * are reserved in `memory`; answers how many of those bytes it kept (the caller releases the
   * rest; chunks that grew past them reserved more). It takes `data`: freed here unless a chunk
   * holds it.
   *
   * Each block is copied into its partition's open chunk ([[HeldChunk]]), so `data` is freed at
   * once. Holding slices of it instead would keep all of `data` alive as long as any one of its
   * blocks stays in memory, while the blocks of its other partitions move to disk or to peers
   * and their bytes are released: the store would hold far more direct memory than `memory`
   * says (measured: executors past -XX:MaxDirectMemorySize, dead). A run of one block of at
   * least half a chunk is held as it came, a chunk of its own: it would fill most of a chunk
   * anyway, and copying it would be the one cost.
   */
  def append(
      shuffleId: Int,
      mapId: Long,
      first: Int,
      sizes: Array[Long],
      data: ByteBuffer): Long = {
    val nonEmpty = sizes.count(_ > 0)
    val whole = nonEmpty == 1 && 2 * data.remaining.toLong >= chunkSize
    val grant = new MemoryGrant(memory)
    var heldWhole = false
    shuffles.merging(shuffleId).foreach { shuffle =>
      var offset = 0
      shuffle.synchronized {
        // A shuffle removed meanwhile keeps nothing: its bytes were released.
        if (!shuffle.removed) sizes.indices.foreach { i =>
          val length = sizes(i).toInt
          if (length > 0 && shuffle.isSealed(first + i)) late.add(length)
          else if (length > 0) {
            // Held whole, it is all of `data` (the one block with bytes), which its arena frees.
            val block =
              if (whole) data else data.duplicate().position(offset).limit(offset + length)
            if (shuffle.append(first + i, mapId, block, whole, chunkSize, grant)) {
              heldWhole = whole
            }
          }
          offset += length
        }
      }
    }
    if (!heldWhole) StorageUtils.dispose(data)
    policy.merged(shuffleId)
    changed()
    grant.keptOfReserved
  }

  /**
   * Merges the blocks of partitions `[start, end)` of this executor's own map output `mapId`
   * (`dataFile` with index `offsets`): one read of the run into memory, if it fits.
   */
  def appendFromFile(
      shuffleId: Int,
      mapId: Long,
      start: Int,
      end: Int,
      dataFile: File,
      offsets: Array[Long]): Long = {
    val total = offsets(end) - offsets(start)
    if (total > Int.MaxValue || !policy.reserve(total, shuffleId)) return 0L
    var kept = 0L
    try {
      val data = ByteBuffer.allocateDirect(total.toInt)
      RunUpload.readFully(dataFile, offsets(start), data)
      data.flip()
      kept = append(shuffleId, mapId, start, RunUpload.sizes(offsets, start, end), data)
    } finally memory.release(total - kept)
    kept
  }

  /**
   * A run of another executor's map output streamed here (see [[RunStream]]); one that does not
   * fit is dropped, its blocks are read from their file.
   */
  def receiveRun(run: PushedRun): StreamCallbackWithID =
    new RunStream(
      run,
      run.end - run.start,
      memory,
      policy.reserve(_, run.shuffleId),
      (sizes, data) =>
        merging.fold(append(run.shuffleId, run.mapId, run.start, sizes, data))(
          mergeLater(run, sizes, data, _)),
      whenFull = RunStream.Drop)

  /**
   * Queues a received run to be merged on `merging`, its bytes reserved until then, and answers
   * them all as kept for now. A layout or a summary first merges the runs still waiting, on its
   * own thread: a run that crossed the network is merged, not dropped by a seal and read again
   * from its file because the merging thread was behind when the map stage ended.
   */
  private def mergeLater(
      run: PushedRun,
      sizes: Array[Long],
      data: ByteBuffer,
      merging: Executor): Long = {
    val reserved = data.remaining.toLong
    waiting.add { () =>
      var kept = 0L
      try kept = append(run.shuffleId, run.mapId, run.start, sizes, data)
      catch {
        case NonFatal(e) =>
          logWarning(s"Could not merge ${run.blockId.name}: its blocks are read from files", e)
      } finally memory.release(reserved - kept)
    }
    try merging.execute(() => mergeWaiting(1))
    catch { case _: RejectedExecutionException => mergeWaiting(1) } // stopping
    reserved
  }

  /** Merges up to `runs` of the received runs waiting, in the order they arrived. */
  def mergeWaiting(runs: Int = Int.MaxValue): Unit = mergingNow.synchronized {
    var merged = 0
    while (merged < runs) {
      val run = waiting.poll()
      if (run == null) return
      run()
      merged += 1
    }
  }
}
