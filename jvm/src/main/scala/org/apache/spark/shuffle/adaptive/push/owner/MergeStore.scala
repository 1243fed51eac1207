package org.apache.spark.shuffle.adaptive.push.owner

import java.io.{File, IOException}
import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue, Executor, RejectedExecutionException}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.network.util.TransportConf
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockBatchId, StorageUtils}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage.{HostedChunkRequest, PushedRun}
import org.apache.spark.shuffle.adaptive.memory.{MemoryBound, MemoryGrant, SpillFile}
import org.apache.spark.shuffle.adaptive.protocol.{MergedChunk, MergedPartition, RunStream, RunUpload}
import org.apache.spark.shuffle.adaptive.transport.RemoteMemory

/**
 * One executor's merged reduce partitions (mode=push), in at most `memory.capacity` bytes of
 * direct memory. Each pushed block of partition p is appended to p's open chunk, and a chunk is
 * closed once it holds `chunkSize` bytes (a block larger than that is a chunk of its own), so a
 * reduce task reads p as a few large chunks instead of a block per map output. A chunk records the
 * map id and length of each block it holds; a map output already merged into p is not appended
 * again (a retried or speculative map task).
 *
 * A reduce task first asks for the layout of its partitions ([[layout]]), which seals them:
 * nothing is appended to a sealed partition, so every chunk is read exactly as its layout
 * describes it, and blocks pushed later stay in their files. Blocks arrive as runs of one map
 * output (a run this executor's pusher reads from its own file, or one another executor streams
 * here); each block kept is copied out of the run's buffer, which is then freed ([[append]]).
 *
 * Remote-memory spill (DSA w/ SMS): once more than [[handOffMark]] bytes are in use, chunks of
 * the partitions with the most merged bytes can be handed off to peers with free memory
 * ([[takeForHandOff]], [[handedOff]]; [[ChunkHandOff]] does it): the hot partitions of a skewed
 * shuffle are the ones that overflow, and each is still read as a few large chunks, from where
 * its layout says they are. An executor holds chunks handed to it ([[receiveHandOff]]) only while
 * at most half its memory is in use, below the mark at which it would hand off its own.
 *
 * When a run does not fit in memory all the same, chunks move to disk to make room
 * ([[SpillFile]], one per shuffle), again the hottest partitions' first. A run is left in its
 * map output's file only when neither memory nor disk takes it.
 *
 * Where `remote` lets peers read this executor's memory one-sided (UCX), a layout exposes the
 * chunks in memory of the partitions it seals, each as one buffer (a copy where it holds
 * several blocks), and names their regions: reduce tasks read them with no request
 * served here. An exposed chunk stays in memory until its shuffle goes (it is neither handed off,
 * as it is sealed, nor moved to disk), so no read finds its region gone.
 *
 * A run another executor pushed is merged on `merging` once it arrived, its bytes reserved
 * until then: a thread below the tasks' priority takes that copy off the block server's event
 * loop, which runs at theirs (without one, on the receiving thread). Layouts and summaries
 * merge whatever still waits first.
 *
 * Everything of a shuffle goes when it is removed; runs of it that arrive later are dropped.
 * `onChange` hears of every change in what is held. Thread-safe.
 */
private[spark] final class MergeStore(
    val memory: MemoryBound,
    chunkSize: Long,
    disk: MergeStore.Disk,
    remote: () => Option[RemoteMemory],
    onChange: MergeStore => Unit,
    merging: Option[Executor] = None)
    extends Logging {

  private[this] val shuffles = new ConcurrentHashMap[Int, ShuffleMerges]
  private[this] val removed = ConcurrentHashMap.newKeySet[Integer]()
  private[this] val movedToDisk = new AtomicLong
  private[this] val movedToPeers = new AtomicLong
  private[this] val heldForPeers = new AtomicLong
  private[this] val exposureFailed = new AtomicBoolean
  // Received runs not merged yet (see mergeLater), and the lock of whoever merges them.
  private[this] val waiting = new ConcurrentLinkedQueue[() => Unit]
  private[this] val mergingNow = new Object

  /** Bytes of chunks moved from memory to disk so far. */
  def bytesMovedToDisk: Long = movedToDisk.get

  /** Bytes of chunks handed off to peers so far. */
  def bytesHandedOff: Long = movedToPeers.get

  /** Bytes of other owners' chunks taken so far. */
  def bytesHostedForPeers: Long = heldForPeers.get

  /** Above this many bytes in use, chunks are handed off to peers. */
  def handOffMark: Long = memory.capacity / 4 * 3

  /** Bytes of other owners' chunks this executor takes now. */
  def roomForPeers: Long = math.max(0L, memory.capacity / 2 - memory.used)

  private def merges(shuffleId: Int): Option[ShuffleMerges] = Option(
    shuffles
      .computeIfAbsent(shuffleId, id => if (removed.contains(id)) null else new ShuffleMerges))

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
    merges(shuffleId).foreach { shuffle =>
      var offset = 0
      shuffle.synchronized {
        // A shuffle removed meanwhile keeps nothing: its bytes were released.
        if (!shuffle.removed) sizes.indices.foreach { i =>
          val length = sizes(i).toInt
          if (length > 0) {
            val block = data.duplicate().position(offset).limit(offset + length)
            if (shuffle.append(first + i, mapId, block, whole, chunkSize, grant)) {
              heldWhole = whole
            }
          }
          offset += length
        }
      }
    }
    if (!heldWhole) StorageUtils.dispose(data)
    if (memory.used > handOffMark) releaseRead(memory.used - memory.capacity / 2, shuffleId)
    onChange(this)
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
    if (total > Int.MaxValue || !reserve(total, shuffleId)) return 0L
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
      run.blockId,
      memory,
      reserve(_, run.shuffleId),
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

  /**
   * Merges up to `runs` of the received runs waiting, in the order they arrived. One thread at a
   * time: a layout that finds none waiting must not seal while another thread merges the last
   * one it took.
   */
  private def mergeWaiting(runs: Int): Unit = mergingNow.synchronized {
    var merged = 0
    while (merged < runs) {
      val run = waiting.poll()
      if (run == null) return
      run()
      merged += 1
    }
  }

  /**
   * Chunk `chunkId` of `partition`, handed off here by its owner; refused (the owner tries
   * elsewhere) when it does not fit in [[roomForPeers]], and when a chunk of that partition and
   * id is here already: owners of two versions of the table may each have merged a chunk of
   * that id, and the one here is the one whose owner's layout names this executor.
   */
  def receiveHandOff(shuffleId: Int, partition: Int, chunkId: Int): StreamCallbackWithID = {
    // Received as a run of the one partition the chunk is of, named as it is asked for here.
    val id = HostedChunkRequest(shuffleId, partition, chunkId)
    new RunStream(
      id.blockId,
      memory,
      bytes => bytes <= roomForPeers && memory.reserve(bytes),
      (_, data) => {
        val kept = merges(shuffleId).fold(0L) { shuffle =>
          shuffle.synchronized(if (shuffle.removed) 0L else shuffle.host(partition, chunkId, data))
        }
        // Kept nothing (held already, or its shuffle is gone): the owner is told and keeps it.
        if (kept > 0) {
          heldForPeers.addAndGet(kept)
          onChange(this)
        }
        kept
      },
      whenFull = RunStream.Refuse)
  }

  /**
   * Chunks in memory of partitions no layout has sealed, at most `bytes` in all, hottest
   * partitions first, to hand off; nothing more is appended to them, and they stay here until
   * [[handedOff]] or [[kept]].
   */
  def takeForHandOff(bytes: Long): Seq[LeavingChunk] = synchronized {
    var taken = 0L
    hottestFirst((s, chunk) => !s.isSealed(chunk.partition)).flatMap { case (id, s, chunk) =>
      if (taken + chunk.bytes > bytes) None
      else
        s.synchronized(s.leave(chunk)).map { upload =>
          taken += chunk.bytes
          new LeavingChunk(id, s, chunk, upload)
        }
    }
  }

  /**
   * `chunk` arrived at `peer`: it is read there from now on and its memory here is freed, unless
   * a layout sealed its partition meanwhile (that layout says it is here, so it stays).
   */
  def handedOff(chunk: LeavingChunk, peer: BlockManagerId): Boolean = {
    val freed = chunk.shuffle.synchronized(chunk.shuffle.handedOff(chunk.chunk, peer))
    memory.release(freed)
    if (freed > 0) movedToPeers.addAndGet(chunk.bytes)
    onChange(this)
    freed > 0
  }

  /** `chunk` could not be handed off: it stays here. */
  def kept(chunk: LeavingChunk): Unit = chunk.shuffle.synchronized(chunk.chunk.leaving = false)

  /**
   * Reserves `bytes` of memory for a run of `shuffleId`, releasing chunks already read of older
   * shuffles, then moving chunks to disk, if that makes them fit.
   */
  private def reserve(bytes: Long, shuffleId: Int): Boolean =
    memory.reserve(bytes) || bytes <= memory.capacity && {
      releaseRead(math.max(bytes, chunkSize) - (memory.capacity - memory.used), shuffleId)
      memory.reserve(bytes) || {
        makeRoom(bytes)
        memory.reserve(bytes)
      }
    }

  /**
   * Releases up to `wanted` bytes of chunks whose partitions were read, of shuffles older than
   * `shuffleId` (the one merging), oldest first: before a chunk moves to disk or to a peer, and
   * as soon as the store is past the hand-off mark. A long-lived application's shuffles are read
   * once, mostly; its store would otherwise stay full of them until Spark's cleaner unregisters
   * them, and every newer shuffle would pay hand-offs and spills. The merging shuffle's own
   * sealed chunks stay: its reduce tasks are reading them. Should a released partition be read
   * again, its blocks are read from their files, as those pushed after its layout sealed it are
   * (a reader holding the older layout finds the chunk gone and reads the files).
   */
  private def releaseRead(wanted: Long, shuffleId: Int): Unit = if (wanted > 0) synchronized {
    var freed = 0L
    val oldestFirst = shuffles.asScala.toSeq.filter(_._1 < shuffleId).sortBy(_._1).iterator
    while (freed < wanted && oldestFirst.hasNext) {
      val s = oldestFirst.next()._2
      freed += s.synchronized(s.releaseSealed(wanted - freed))
    }
    memory.release(freed)
  }

  /**
   * Moves chunks to disk until `bytes` (at least a chunk's worth, so that a stream of runs does
   * not move one chunk each) are free: the chunks of the partitions with the most merged bytes
   * first, the largest of each first. Stops at the first write that fails.
   */
  private def makeRoom(bytes: Long): Unit = synchronized {
    val wanted = math.max(bytes, chunkSize) - (memory.capacity - memory.used)
    if (wanted <= 0) return
    val inOrder = hottestFirst((_, chunk) => chunk.region.isEmpty).iterator
    var freed = 0L
    var moved = 0L
    try {
      while (freed < wanted && inOrder.hasNext) {
        val (id, s, chunk) = inOrder.next()
        val memoryFreed = s.synchronized(s.moveToDisk(chunk, disk.file(id)))
        if (memoryFreed > 0) moved += chunk.bytes
        freed += memoryFreed
      }
    } catch {
      case NonFatal(e) =>
        logWarning(
          "Could not move merged chunks to disk; runs that do not fit stay in their files",
          e)
    } finally {
      memory.release(freed)
      movedToDisk.addAndGet(moved)
    }
  }

  /**
   * The chunks in memory that are not on their way to a peer and that `movable` allows, with
   * their shuffle: those of the partitions with the most merged bytes first, the largest of each
   * first (a skewed shuffle's hot partitions are the ones that overflow).
   */
  private def hottestFirst(
      movable: (ShuffleMerges, HeldChunk) => Boolean): Seq[(Int, ShuffleMerges, HeldChunk)] =
    shuffles.asScala.toSeq
      .flatMap { case (id, s) =>
        s.synchronized(s.inMemory.collect {
          case (chunk, partitionBytes) if !chunk.leaving && movable(s, chunk) =>
            (id, s, chunk, partitionBytes)
        })
      }
      .sortBy { case (_, _, chunk, partitionBytes) => (-partitionBytes, -chunk.bytes) }
      .map { case (id, s, chunk, _) => (id, s, chunk) }

  /**
   * What this executor merged of `shuffleId` so far, per partition (for the driver's summary at
   * the map stage's end); seals nothing.
   */
  def summary(shuffleId: Int): Seq[MergedPartition] = {
    mergeWaiting(Int.MaxValue)
    Option(shuffles.get(shuffleId)).fold(Seq.empty[MergedPartition])(s => s.synchronized(s.summary))
  }

  /**
   * The chunks of partitions `[start, end)`, which are sealed from now on; for a peer, those in
   * memory exposed to one-sided reads where `remote` allows them (this executor's own tasks read
   * its chunks in place).
   */
  def layout(shuffleId: Int, start: Int, end: Int, forPeer: Boolean): Seq[MergedChunk] = {
    mergeWaiting(Int.MaxValue)
    val exposing = if (forPeer) remote() else None
    merges(shuffleId).fold(Seq.empty[MergedChunk]) { s =>
      s.synchronized(s.seal(start, end, chunk => exposing.foreach(expose(chunk, _))))
    }
  }

  private def expose(chunk: HeldChunk, to: RemoteMemory): Unit =
    try chunk.expose(to)
    catch {
      case NonFatal(e) =>
        // Such chunks are read through the block server: say so once, not per chunk.
        if (!exposureFailed.getAndSet(true)) {
          logWarning("Merged chunks could not be exposed to one-sided reads", e)
        }
    }

  /**
   * A chunk's bytes: a view of them in memory, or a segment of its shuffle's merged file; none
   * once it was handed off.
   */
  def chunk(shuffleId: Int, chunkId: Int): Option[ManagedBuffer] =
    Option(shuffles.get(shuffleId)).flatMap(s => s.synchronized(s.bytesOf(chunkId)))

  /**
   * The bytes of the chunks this executor holds of partitions `[start, end)`, back to back in
   * their layout's order (those handed off to peers left out); none unless a layout sealed
   * every one of them, so the chunks are those the layout listed.
   */
  def range(shuffleId: Int, start: Int, end: Int): Option[ManagedBuffer] =
    Option(shuffles.get(shuffleId)).flatMap(s => s.synchronized(s.range(start, end)))

  /** A view of the bytes of chunk `chunkId` of `partition`, which its owner handed off here. */
  def hostedChunk(shuffleId: Int, partition: Int, chunkId: Int): Option[ManagedBuffer] =
    Option(shuffles.get(shuffleId)).flatMap(s => s.synchronized(s.hostedBytes(partition, chunkId)))

  def removeShuffle(shuffleId: Int): Unit = {
    removed.add(shuffleId)
    Option(shuffles.remove(shuffleId)).foreach { s =>
      memory.release(s.synchronized { s.removed = true; s.unexpose(); s.bytes })
      disk.remove(shuffleId)
      onChange(this)
    }
  }

  def clear(): Unit = shuffles.keySet.forEach(id => removeShuffle(id))
}

private[spark] object MergeStore {

  /**
   * Where an executor's merged chunks go when memory is short: one [[SpillFile]] per shuffle,
   * made by `newFile` when a shuffle's first chunk moves there.
   */
  final class Disk(newFile: () => File, transport: TransportConf) {
    private[this] val files = new ConcurrentHashMap[Int, SpillFile]

    def file(shuffleId: Int): SpillFile =
      files.computeIfAbsent(shuffleId, _ => new SpillFile(newFile(), transport))

    def remove(shuffleId: Int): Unit = Option(files.remove(shuffleId)).foreach(_.delete())
  }
}
