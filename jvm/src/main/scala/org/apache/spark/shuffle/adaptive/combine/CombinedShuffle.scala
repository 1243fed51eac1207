package org.apache.spark.shuffle.adaptive.combine

import java.io.OutputStream
import java.nio.ByteBuffer
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import java.util.zip.CRC32C

import scala.collection.mutable
import scala.util.control.NonFatal

import io.netty.buffer.Unpooled
import org.roaringbitmap.RoaringBitmap

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.{ManagedBuffer, NettyManagedBuffer}
import org.apache.spark.serializer.Serializer
import org.apache.spark.storage.{BlockId, ShuffleBlockId}
import org.apache.spark.util.io.ChunkedByteBufferOutputStream
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.protocol.{CombinedSegment, Payloads}

/**
 * One executor's combined records of one shuffle (local reduction). Each map task that commits
 * here folds what it wrote into them ([[fold]]), partition by partition, so a reduce partition
 * holds one record per key of every map output folded into it. A reduce task's read of a range
 * of partitions ([[read]]) seals them: their records are written once, as the map side writes a
 * block, into a segment that names the map outputs it holds (those with rows for the partition);
 * what is folded after goes to a new segment. A reduce task reads a segment only if the map
 * outputs it names are all ones it needs ([[CombinedRead]]), so a segment may hold attempts
 * Spark did not keep, or maps outside a task's range, and still no row is read twice or missed.
 *
 * A map output folds into a partition once. Spark may run a map task again (a stage retried,
 * its map outputs lost): under `spark.shuffle.useOldFetchProtocol` the new attempt has the same
 * map id as the first, under the default protocol a new one, and the first attempt's rows may
 * differ where the stage is indeterminate. So a fold of a map index already folded into a
 * partition first forgets every earlier attempt there: the open records holding it are dropped
 * and the segments naming it are never served (their other map outputs are read from their files,
 * as they would be without local reduction), and then the new attempt folds into fresh records.
 *
 * Memory: what a fold may take is reserved first, so a fold of a map output's rows into a
 * partition never stops half way (a partition it cannot fold into is read from the map output's
 * file); when the reservation fails, every partition is sealed, which gives the combined records'
 * memory back for their much smaller segments, and segments go to disk if that is not enough.
 * Combining stops here for good once the maps folded show little reduction: fewer than a tenth
 * of the rows that could meet a key (rows folded into records already holding another map
 * output's) did, over two map outputs, or one of 50,000 rows or more (keys that do not repeat
 * across map tasks); or
 * when no fold could meet a key in the first [[CombinedShuffle.MapsWithoutRoom]] (the memory
 * holds less than two map outputs' records).
 *
 * Until that verdict, map tasks keep and fold one partition in [[CombinedShuffle.SampleStride]]
 * ([[keeps]]): where keys do not repeat, the verdict costs that share of a fold, and where they
 * do, the first map outputs' other partitions are read from their files.
 *
 * Thread-safe: each partition under its own lock, the engines one per thread.
 */
private[spark] final class CombinedShuffle(
    val shuffleId: Int,
    numPartitions: Int,
    spec: CombineSpec,
    serializer: Serializer,
    memory: CombineMemory,
    wrap: (BlockId, OutputStream) => OutputStream,
    disk: () => SpillFile)
    extends Logging {

  // Until folds here show reduction, engines interpret: generating their code would cost more
  // than the sampled folds it speeds up, and nothing at all where keys do not repeat.
  private[this] val interpreting =
    ThreadLocal.withInitial[CombineEngine](() => spec.newEngine(compiled = false))
  private[this] val compiled =
    ThreadLocal.withInitial[CombineEngine](() => spec.newEngine(compiled = true))
  private[this] val partitions = new ConcurrentHashMap[Int, PartitionState]
  private[this] val mapsFolded = new AtomicLong
  // Of folds into records that held another map output's rows: what combining is judged by.
  private[this] val mapsJudged = new AtomicLong
  private[this] val rowsJudged = new AtomicLong
  private[this] val rowsMerged = new AtomicLong
  @volatile private[this] var stopped = false
  // Folds showed enough reduction: map tasks keep every partition from now on.
  @volatile private[this] var paid = false
  private[this] val sampleStride =
    if (numPartitions >= 2 * CombinedShuffle.SampleStride) CombinedShuffle.SampleStride else 1
  @volatile private[this] var removed = false
  private[this] var file: Option[SpillFile] = None

  /** Whether map tasks still fold here (see the class comment). */
  def combining: Boolean = !stopped && !removed

  /**
   * Whether a map task keeps its rows of `partition` to fold them: every partition once folds
   * here showed reduction, one in [[CombinedShuffle.SampleStride]] until then (keys that do not
   * repeat cost the verdict that much less; a partition not kept is read from the map output's
   * file, as without local reduction).
   */
  def keeps(partition: Int): Boolean = paid || partition % sampleStride == 0

  /** This thread's engine: any makes the same records, bytes for bytes. */
  private def engine: CombineEngine = (if (paid) compiled else interpreting).get()

  /**
   * A map task's records of this shuffle, to be kept as it writes them; when they find no room,
   * what is combined so far is sealed, once, to make some.
   */
  def newTaskRecords(): TaskRecords = {
    var sealedForThisTask = false
    val budget = new Budget {
      override def reserve(bytes: Long): Boolean = memory.forTask.reserve(bytes) || {
        !sealedForThisTask && {
          sealedForThisTask = true
          sealAll()
          memory.forTask.reserve(bytes)
        }
      }
      override def release(bytes: Long): Unit = memory.forTask.release(bytes)
    }
    engine.newTaskRecords(budget, numPartitions)
  }

  /**
   * Folds the records map output `mapId` (of map index `mapIndex`) wrote (its task committed)
   * into each partition; answers what it did. Called on the map task's thread before its
   * MapStatus leaves.
   */
  def fold(mapId: Long, mapIndex: Int, task: TaskRecords): Fold = {
    val engine = this.engine
    var folded, skipped = 0
    var rows, merged, judged, judgedMerged = 0L
    task.partitions.foreach { p =>
      val state = partitions.computeIfAbsent(p, _ => new PartitionState)
      val outcome = foldInto(state, p, mapId, mapIndex, task, engine).orElse {
        // No room: sealing turns the combined records into their much smaller segments.
        sealAll()
        foldInto(state, p, mapId, mapIndex, task, engine)
      }
      outcome match {
        case Some((count, couldMeet)) =>
          folded += 1
          rows += count.rows
          merged += count.merged
          if (couldMeet) {
            judged += count.rows
            judgedMerged += count.merged
          }
        case None => skipped += 1
      }
    }
    mapsFolded.incrementAndGet()
    if (judged > 0) mapsJudged.incrementAndGet()
    val allJudged = rowsJudged.addAndGet(judged)
    val allMerged = rowsMerged.addAndGet(judgedMerged)
    if (!stopped) {
      val judgedEnough = mapsJudged.get >= CombinedShuffle.MapsBeforeJudging ||
        (mapsJudged.get > 0 && allJudged >= CombinedShuffle.RowsBeforeJudging)
      if (judgedEnough && allMerged < CombinedShuffle.MinMergedShare * allJudged) {
        stop(
          s"$allMerged of the $allJudged rows that could meet a key folded before did, over " +
            s"${mapsJudged.get} map outputs")
      } else if (judgedEnough) {
        paid = true
      } else if (mapsJudged.get == 0 && mapsFolded.get >= CombinedShuffle.MapsWithoutRoom) {
        stop(
          s"no fold of its first ${mapsFolded.get} map outputs found another map output's rows " +
            "in memory to merge with (combine.maxMemory holds less than two map outputs' records)")
      }
    }
    Fold(folded, skipped, rows, merged, task.partitions.map(task.bytes).sum)
  }

  private def stop(why: String): Unit = {
    stopped = true
    logInfo(s"Shuffle $shuffleId: $why; its later map outputs are not combined here")
    // Nothing folds here any more: what merged nothing is freed now rather than at the first
    // read, and the rest becomes its (smaller) segments.
    sealAll()
  }

  /** The fold's count, and whether its rows could meet keys of another map output. */
  private def foldInto(
      state: PartitionState,
      p: Int,
      mapId: Long,
      mapIndex: Int,
      task: TaskRecords,
      engine: CombineEngine): Option[(FoldCount, Boolean)] = state.synchronized {
    if (removed) return None
    if (state.folded.contains(mapIndex)) forgetEarlierAttempts(state, p, mapIndex)
    // New combined records hold nothing until their first fold.
    if (state.open == null) state.open = engine.newCombined(memory.held)
    val worst = engine.worstCase(task, p, state.open)
    if (!memory.held.reserve(worst)) return None
    val before = state.open.bytes
    val couldMeet = state.open.rows > 0
    try {
      val count = engine.fold(task, p, state.open)
      state.contributors += mapId
      state.contributorIndexes += mapIndex
      state.folded.add(mapIndex)
      state.merged += count.merged
      Some((count, couldMeet))
    } catch {
      case NonFatal(e) =>
        // Half folded, the records hold part of a map output: drop them, so that every map
        // output they held is read from its file.
        logWarning(s"Could not fold map output $mapId into partition $p of shuffle $shuffleId", e)
        state.drop()
        None
    } finally {
      val used = if (state.open == null) 0L else state.open.bytes - before
      memory.held.release(worst - math.max(0L, used))
    }
  }

  /**
   * Map index `mapIndex` folds into partition `p` again (its task ran again): the open records
   * holding an earlier attempt are dropped and the segments naming one never served, so no
   * reduce task reads two attempts of a map output, or the attempt Spark did not keep.
   */
  private def forgetEarlierAttempts(state: PartitionState, p: Int, mapIndex: Int): Unit = {
    val open = state.contributorIndexes.contains(mapIndex)
    if (open) state.drop()
    val (stale, kept) = state.segments.partition(_.mapIndexes.contains(mapIndex))
    stale.filter(_.inMemory).foreach(s => memory.held.release(s.segment.length))
    state.segments.clear()
    state.segments ++= kept
    state.refreshFolded()
    logInfo(
      s"Shuffle $shuffleId, partition $p: map index $mapIndex folds again (its task ran again); " +
        s"${if (open) "the open records and " else ""}${stale.size} segments holding an earlier " +
        "attempt of it are not read")
  }

  /**
   * The segments of partitions `[start, end)`, each sealed first: a header, then their bytes
   * ([[Payloads.encodeHeader]]).
   */
  def read(start: Int, end: Int): ManagedBuffer = {
    val sealedSegments = (start until end).flatMap { p =>
      Option(partitions.get(p)).toSeq.flatMap { state =>
        state.synchronized {
          seal(state, p)
          state.segments.map(s => s.segment -> s.bytes)
        }
      }
    }
    val header = Payloads.encodeHeader(sealedSegments.map(_._1))
    new NettyManagedBuffer(Unpooled.wrappedBuffer(header +: sealedSegments.flatMap(_._2): _*))
  }

  /** Seals every partition: their combined records become segments. */
  def sealAll(): Unit = {
    partitions.forEach((p, state) => state.synchronized(seal(state, p)))
    if (!memory.roomForFolds) moveSegmentsToDisk()
  }

  /**
   * Writes `state`'s open records into a segment and frees them; the caller holds its lock.
   * Records no fold merged into make no segment: the files hold the same rows, so reduce tasks
   * read those (as they would without local reduction).
   */
  private def seal(state: PartitionState, p: Int): Unit =
    if (!removed && state.open != null) {
      if (state.merged > 0) {
        val out =
          new ChunkedByteBufferOutputStream(CombinedShuffle.SegmentChunkBytes, ByteBuffer.allocate)
        val stream =
          serializer.newInstance().serializeStream(wrap(ShuffleBlockId(shuffleId, 0, p), out))
        try engine.write(p, state.open, stream)
        finally stream.close()
        val chunks = out.toChunkedByteBuffer.getChunks().toSeq
        val crc = new CRC32C
        chunks.foreach(c => crc.update(c.duplicate()))
        val length = chunks.iterator.map(_.remaining.toLong).sum
        val segment =
          CombinedSegment(p, state.open.rows, length, crc.getValue, state.contributors.toArray)
        val sealedSegment = new SealedSegment(segment, state.contributorIndexes.toArray, chunks)
        if (!memory.held.reserve(length)) toDisk(sealedSegment)
        state.segments += sealedSegment
      }
      state.drop()
    }

  private[combine] def moveSegmentsToDisk(): Unit =
    partitions.forEach((_, state) =>
      state.synchronized(state.segments.filter(_.inMemory).foreach { s =>
        toDisk(s)
        memory.held.release(s.segment.length)
      }))

  private def toDisk(s: SealedSegment): Unit = {
    val f = synchronized {
      if (file.isEmpty) file = Some(disk())
      file.get
    }
    val offset = f.synchronized(f.append(s.inMemoryChunks))
    s.movedTo(f, offset)
  }

  /** Gives back all memory and deletes the file; nothing is folded or read after. */
  def remove(): Unit = {
    removed = true
    partitions.forEach((_, state) =>
      state.synchronized {
        state.drop()
        state.segments.filter(_.inMemory).foreach(s => memory.held.release(s.segment.length))
        state.segments.clear()
      })
    synchronized(file.foreach(_.delete()))
  }

  private final class PartitionState {
    var open: CombinedRecords = _

    /** The map outputs folded into `open`: their map ids, and their map indexes. */
    val contributors = mutable.ArrayBuffer.empty[Long]
    val contributorIndexes = mutable.ArrayBuffer.empty[Int]

    /** The map indexes `open` and the segments hold. */
    val folded = new RoaringBitmap

    /** Rows folded into `open` that met a key it held. */
    var merged = 0L
    val segments = mutable.ArrayBuffer.empty[SealedSegment]

    def drop(): Unit = {
      if (open != null) open.free()
      open = null
      contributors.clear()
      contributorIndexes.clear()
      merged = 0
      refreshFolded()
    }

    def refreshFolded(): Unit = {
      folded.clear()
      contributorIndexes.foreach(folded.add)
      segments.foreach(_.mapIndexes.foreach(folded.add))
    }
  }
}

private[spark] object CombinedShuffle {

  /**
   * Combining is judged once this many map outputs folded into records holding another's, or
   * once one did with [[RowsBeforeJudging]] rows: a large map output says as much as two small
   * ones, and every map output kept and folded before the verdict costs its rows' copy and
   * probe when keys do not repeat.
   */
  val MapsBeforeJudging = 2
  val RowsBeforeJudging = 50000L

  /**
   * Until folds showed reduction, map tasks keep one partition in this many (of shuffles with
   * twice as many partitions or more).
   */
  val SampleStride = 8

  /** Map outputs folded, none into records holding another's, before combining stops. */
  val MapsWithoutRoom = 8

  /** Below this share of folded rows meeting a key folded before, combining stops. */
  val MinMergedShare = 0.1

  private val SegmentChunkBytes = 64 * 1024
}

/** What one fold of a map output did. */
private[spark] final case class Fold(
    partitions: Int,
    partitionsSkipped: Int,
    rows: Long,
    rowsMerged: Long,
    bytes: Long)

/** A sealed segment (of map outputs of `mapIndexes`): its bytes in memory, or where on disk. */
private final class SealedSegment(
    val segment: CombinedSegment,
    val mapIndexes: Array[Int],
    chunks: Seq[ByteBuffer]) {
  private[this] var inMemoryBytes: Seq[ByteBuffer] = chunks
  private[this] var onDisk: Option[(SpillFile, Long)] = None

  def inMemory: Boolean = onDisk.isEmpty

  def inMemoryChunks: Seq[ByteBuffer] = inMemoryBytes

  def movedTo(file: SpillFile, offset: Long): Unit = {
    onDisk = Some((file, offset))
    inMemoryBytes = Nil
  }

  def bytes: Seq[ByteBuffer] = onDisk match {
    case Some((file, offset)) => Seq(file.segment(offset, segment.length).nioByteBuffer())
    case None => inMemoryBytes.map(_.duplicate())
  }
}
