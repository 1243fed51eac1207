package org.apache.spark.shuffle.adaptive.combine.store

import java.io.OutputStream
import java.nio.ByteBuffer
import java.util.concurrent.ConcurrentHashMap
import java.util.zip.CRC32C

import scala.util.control.NonFatal

import io.netty.buffer.Unpooled
import org.roaringbitmap.RoaringBitmap

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.{ManagedBuffer, NettyManagedBuffer}
import org.apache.spark.serializer.{SerializationStream, Serializer}
import org.apache.spark.storage.{BlockId, ShuffleBlockId}
import org.apache.spark.util.io.ChunkedByteBufferOutputStream
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.combine.protocol.{CombinedAnswer, CombinedPayload, CombinedSegment}
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombineSpec, FoldCount}
import org.apache.spark.shuffle.adaptive.combine.map.{IntSet, KeySample, TaskSample, Verdict}

/**
 * One executor's combined records of one shuffle (local reduction). A map task that folds keeps
 * its records instead of writing them to its map output's file, and once that file is committed
 * (before its MapStatus leaves the task) folds them in here ([[fold]]), partition by partition,
 * so a reduce partition holds one record per key of every map output folded into it. The
 * combined records are the only copy of what was folded. A reduce task's read of a range of
 * partitions ([[read]]) seals them: their records are written once, as the map side writes a
 * block, into a segment that names the map outputs it holds; what is folded after goes to a new
 * segment. A reduce task reads each segment whose map outputs are all ones it needs, skips those
 * that name none of them (map outputs Spark no longer keeps), and fails its fetch on any other
 * ([[CombinedRead]]), so that Spark runs the executor's map tasks again.
 *
 * Memory: combined records reserve what they grow by as a fold adds keys; when they find no
 * room, every partition is sealed, which gives the combined records' memory back for their much
 * smaller segments (on disk when memory is short), and the fold goes on into fresh records; what
 * still finds no room becomes a segment of that map output's records alone. A record is folded
 * or in a segment, never both. A fold that fails all the same (a merge throws) loses the records
 * it was folding into: their map outputs are answered as lost ([[PartitionRecords.poison]]) and
 * the map task fails.
 *
 * Whether map tasks fold at all is the [[Verdict]]'s: they do where merges pay for the folds,
 * which judging map tasks, writing their files whole, find out first.
 *
 * Thread-safe: each partition under its own lock, the engines one per thread.
 */
private[spark] final class CombinedShuffle(
    val shuffleId: Int,
    numPartitions: Int,
    val spec: CombineSpec,
    serializer: Serializer,
    memory: CombineMemory,
    wrap: (BlockId, OutputStream) => OutputStream,
    disk: () => SpillFile)
    extends Logging {

  private[this] val engines =
    ThreadLocal.withInitial[CombineEngine[spec.Task, spec.Combined]](() => spec.newEngine())
  private[this] val partitions = new ConcurrentHashMap[Int, PartitionRecords[spec.Combined]]
  private[this] val verdict = new Verdict(spec.breakEven)
  private[this] val sample = new KeySample
  @volatile private[this] var removed = false
  private[this] var file: Option[SpillFile] = None

  /** The map indexes whose tasks started here, by any attempt. */
  private[this] val startedMaps = new RoaringBitmap

  /**
   * What the map task of `mapIndex` starting now does: fold its records here, judge whether
   * folding would pay (writing its file whole), or write its file whole ([[Verdict]]); with the
   * judging round. A map index starts here to fold or judge once: a task Spark runs again here
   * (its map outputs lost, a later job's new stage for the same shuffle, a speculative copy)
   * writes its file whole, so that no segment mixes two attempts of a map output.
   */
  def nextMap(mapIndex: Int): (Verdict.Role, Int) =
    if (removed || !startedMaps.synchronized(startedMaps.checkedAdd(mapIndex))) (Verdict.Write, 0)
    else verdict.nextMap()

  /** A judging map task of `round` committed its file whole: its sample judges ([[Verdict]]). */
  def judge(round: Int, task: TaskSample): Unit = {
    val (probed, met) = sample.probeAndAdd(round, task)
    decide(round, probed, met)
  }

  /**
   * The sample of the map outputs judged so far in `round`, to look a judging map task's keys up
   * in as it writes them ([[KeySample.snapshot]]).
   */
  def sampleOf(round: Int): Option[(IntSet, Int)] = sample.snapshot(round)

  /**
   * A judging map task of `round` found `met` of the first `probed` of its sampled keys in
   * [[sampleOf]]: whether folding starts now (the task folds the rest of its records). Only a
   * share that pays decides this early: the first keys a task writes may be a biased sample of
   * the rest (input ordered by anything that orders keys), and folding that does not pay goes
   * off again after two map outputs, where not folding would wait for the next judgement.
   */
  def foldEarly(round: Int, probed: Long, met: Long): Boolean =
    met >= spec.breakEven * probed && decide(round, probed, met)

  private def decide(round: Int, probed: Long, met: Long): Boolean =
    verdict.judged(round, probed, met).exists { folds =>
      sample.clear()
      logInfo(
        s"Shuffle $shuffleId (${spec.kind}): $met of $probed sampled keys of a map output were " +
          "among those of the map outputs before it here: " +
          s"${if (folds) "folding" else "not folding"} (folding pays from a share of " +
          s"${spec.breakEven})")
      folds
    }

  /** The most bytes the executor's local reduction held at once so far. */
  def memoryPeak: Long = memory.highWater

  /** This thread's engine: any makes the same records, bytes for bytes. */
  private def engine: CombineEngine[spec.Task, spec.Combined] = engines.get()

  /**
   * A map task's records of this shuffle, to be kept as it writes them. What does not fit is
   * written to the map output's file, and the combined records stay to merge into; only a task
   * that finds no room for its first records seals them (their segments are much smaller), as
   * they leave no room to fold into.
   */
  def newTaskRecords(): spec.Task = {
    var keptSome = false
    val budget = new Budget {
      override def reserve(bytes: Long): Boolean = {
        val fits = memory.forTask.reserve(bytes) || (!keptSome && {
          sealAll()
          memory.forTask.reserve(bytes)
        })
        keptSome ||= fits
        fits
      }
      override def release(bytes: Long): Unit = memory.forTask.release(bytes)
    }
    engine.newTaskRecords(budget, numPartitions)
  }

  /**
   * Folds the records map output `mapId` kept (its task committed the file that holds the rest)
   * into each partition; answers what it did. Called on the map task's thread before its
   * MapStatus leaves; a fold that throws fails the task (see the class comment).
   */
  def fold(mapId: Long, task: spec.Task): Fold = {
    val engine = this.engine
    var overflowed = 0
    var rows, merged, newBytes, judged, judgedMerged = 0L
    var couldMeet = false
    var sealedToMakeRoom = false
    task.partitions.foreach { p =>
      val state = partitions.computeIfAbsent(p, _ => new PartitionRecords[spec.Combined])
      val total = task.rows(p)
      var from = 0
      while (from < total) {
        val (count, met) = foldFrom(state, p, mapId, task, from, engine)
        rows += count.rows
        merged += count.merged
        newBytes += count.newBytes
        if (met) {
          couldMeet = true
          judged += count.rows
          judgedMerged += count.merged
        }
        from = count.next
        if (from < total) {
          if (!sealedToMakeRoom) {
            // No room: sealing turns the combined records into their much smaller segments.
            sealedToMakeRoom = true
            sealAll()
          } else {
            // None even then: the rest is a segment of this map output's records alone.
            overflowed += 1
            rows += total - from
            newBytes += task.bytes(p) * (total - from) / total
            state.synchronized(if (!removed) overflow(state, p, mapId, task, from, engine))
            from = total
          }
        }
      }
    }
    verdict.folded(judged, judgedMerged, couldMeet).foreach { why =>
      logInfo(
        s"Shuffle $shuffleId (${spec.kind}): $why; its next map outputs are written to their files")
      // What stays in memory costs the heap where folding does not pay: the records become their
      // segments, on disk.
      sealAll()
      moveSegmentsToDisk()
    }
    Fold(overflowed, rows, merged, newBytes, task.partitions.map(task.bytes).sum)
  }

  /**
   * Folds `task`'s records of `p` from the `from`th on into its open records, for as long as
   * they find room; the count, and whether the records held another map output's.
   */
  private def foldFrom(
      state: PartitionRecords[spec.Combined],
      p: Int,
      mapId: Long,
      task: spec.Task,
      from: Int,
      engine: CombineEngine[spec.Task, spec.Combined]): (FoldCount, Boolean) = state.synchronized {
    val total = task.rows(p)
    if (removed) return (FoldCount(total - from, 0, 0, total), false)
    // New combined records hold nothing until their first fold.
    if (state.open == null) state.open = engine.newCombined(memory.held)
    val couldMeet = state.open.rows > 0
    try {
      val count = engine.fold(task, p, from, state.open)
      if (count.rows > 0 && !state.openMaps.lastOption.contains(mapId)) state.openMaps += mapId
      (count, couldMeet)
    } catch {
      case NonFatal(e) =>
        logWarning(
          s"Folding map output $mapId into partition $p of shuffle $shuffleId failed; the " +
            s"records of ${state.openMaps.size} map outputs folded into it are lost here",
          e)
        state.poison(mapId)
        throw e
    }
  }

  /** `task`'s records of `p` from the `from`th on, which found no room, as a segment alone. */
  private def overflow(
      state: PartitionRecords[spec.Combined],
      p: Int,
      mapId: Long,
      task: spec.Task,
      from: Int,
      engine: CombineEngine[spec.Task, spec.Combined]): Unit =
    state.segments += segmentOf(p, (task.rows(p) - from).toLong, Array(mapId))(
      engine.writeKept(task, p, from, _))

  /**
   * The segments of partitions `[start, end)`, each sealed first, and the map outputs lost
   * there: an answer's header, then the segments' bytes ([[CombinedPayload.encode]]).
   */
  def read(start: Int, end: Int): ManagedBuffer = {
    val byPartition = (start until end).flatMap { p =>
      Option(partitions.get(p)).map { state =>
        state.synchronized {
          seal(state, p)
          (p, state.lost.toArray, state.segments.map(s => s.segment -> s.bytes).toVector)
        }
      }
    }
    val segments = byPartition.flatMap(_._3)
    val answer = CombinedAnswer(
      known = !removed,
      byPartition.collect { case (p, lost, _) if lost.nonEmpty => p -> lost },
      segments.map(_._1))
    val header = CombinedPayload.encode(answer)
    new NettyManagedBuffer(Unpooled.wrappedBuffer(header +: segments.flatMap(_._2): _*))
  }

  /** Seals every partition: their combined records become segments. */
  def sealAll(): Unit = {
    partitions.forEach((p, state) => state.synchronized(seal(state, p)))
    if (!memory.roomForFolds) moveSegmentsToDisk()
  }

  /** Writes `state`'s open records into a segment and frees them; the caller holds its lock. */
  private def seal(state: PartitionRecords[spec.Combined], p: Int): Unit =
    if (!removed && state.open != null) {
      if (state.open.rows > 0) {
        val records = state.open
        val engine = this.engine
        state.segments += segmentOf(p, records.rows, state.openMaps.toArray)(
          engine.write(p, records, _))
      }
      state.closeOpen()
    }

  /** A segment of `rows` records of `p` from `mapIds`, which `write` writes. */
  private def segmentOf(p: Int, rows: Long, mapIds: Array[Long])(
      write: SerializationStream => Unit): SealedSegment = {
    val out =
      new ChunkedByteBufferOutputStream(CombinedShuffle.SegmentChunkBytes, ByteBuffer.allocate)
    val stream =
      serializer.newInstance().serializeStream(wrap(ShuffleBlockId(shuffleId, 0, p), out))
    try write(stream)
    finally stream.close()
    val chunks = out.toChunkedByteBuffer.getChunks().toSeq
    val crc = new CRC32C
    chunks.foreach(c => crc.update(c.duplicate()))
    val length = chunks.iterator.map(_.remaining.toLong).sum
    val segment = new SealedSegment(CombinedSegment(p, rows, length, crc.getValue, mapIds), chunks)
    if (!memory.held.reserve(length)) toDisk(segment)
    segment
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
        state.closeOpen()
        state.segments.filter(_.inMemory).foreach(s => memory.held.release(s.segment.length))
        state.segments.clear()
      })
    synchronized(file.foreach(_.delete()))
  }
}

private[spark] object CombinedShuffle {
  private val SegmentChunkBytes = 64 * 1024
}

/**
 * What one fold of a map output did: partitions that found no room (each a segment of its own),
 * records folded, those that met a key held, the bytes of those that did not (which segments
 * will hold), and the bytes kept.
 */
private[combine] final case class Fold(
    partitionsOverflowed: Int,
    rows: Long,
    rowsMerged: Long,
    newBytes: Long,
    bytes: Long)
