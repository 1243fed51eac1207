package org.apache.spark.shuffle.adaptive.combine

import java.io.{ByteArrayInputStream, File}
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{Aggregator, SparkConf}
import org.apache.spark.network.util.{MapConfigProvider, TransportConf}
import org.apache.spark.serializer.JavaSerializer
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.protocol.Payloads

/**
 * One executor's combined records of a shuffle, with an RDD aggregator (sums): folds of map
 * outputs merge by key, a read seals what it reads into segments naming the map outputs they
 * hold, later folds go to new segments, and memory bounds what is kept.
 */
class CombinedShuffleSuite extends AnyFunSuite {

  private val serializer = new JavaSerializer(new SparkConf)
  private val sum = new AggregatorCombine(
    new Aggregator[Any, Any, Any](
      v => v,
      (c, v) => c.asInstanceOf[Int] + v.asInstanceOf[Int],
      (a, b) => a.asInstanceOf[Int] + b.asInstanceOf[Int]))
  private val transport = new TransportConf("shuffle", MapConfigProvider.EMPTY)
  private val dir = Files.createTempDirectory("combined-shuffle-suite").toFile
  dir.deleteOnExit()

  /** [[sum]], counting the engines it made that generate code. */
  private final class CountingSpec extends CombineSpec {
    val compiledEngines = new java.util.concurrent.atomic.AtomicInteger
    override def kind: String = sum.kind
    override def newEngine(compiled: Boolean): CombineEngine = {
      if (compiled) compiledEngines.incrementAndGet()
      sum.newEngine(compiled)
    }
  }

  private def newShuffle(
      memory: CombineMemory,
      numPartitions: Int = 2,
      spec: CombineSpec = sum): CombinedShuffle =
    new CombinedShuffle(
      0,
      numPartitions,
      spec,
      serializer,
      memory,
      (_, out) => out,
      () => new SpillFile(File.createTempFile("combined", ".data", dir), transport))

  /**
   * Map output `mapId` (of map index `mapIndex`, by default its id) writing `records` (key,
   * value), key k to partition k % 2.
   */
  private def fold(
      shuffle: CombinedShuffle,
      mapId: Long,
      records: Seq[(Int, Int)],
      mapIndex: Int = -1): Fold = {
    val task = shuffle.newTaskRecords()
    try {
      records.foreach { case (k, v) => assert(task.add(k % 2, (k, v))) }
      shuffle.fold(mapId, if (mapIndex < 0) mapId.toInt else mapIndex, task)
    } finally task.release()
  }

  /** Each segment of partitions `[start, end)`: its partition, map ids and records. */
  private def read(
      shuffle: CombinedShuffle,
      start: Int,
      end: Int): Seq[(Int, Seq[Long], Map[Int, Int])] = {
    val data = shuffle.read(start, end).nioByteBuffer()
    val (segments, header) = Payloads.decodeHeader(data)
    var offset = data.position() + header
    segments.map { s =>
      val bytes = new Array[Byte](s.length.toInt)
      data.duplicate().position(offset).get(bytes)
      offset += bytes.length
      val records = serializer
        .newInstance()
        .deserializeStream(new ByteArrayInputStream(bytes))
        .asKeyValueIterator
        .map { case (k, v) => k.asInstanceOf[Int] -> v.asInstanceOf[Int] }
        .toMap
      assert(records.size === s.rows)
      (s.partition, s.mapIds.toSeq, records)
    }
  }

  test("map outputs fold into one record per key, read as a segment per partition") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    val folded = fold(shuffle, 7, Seq(1 -> 10, 2 -> 20, 3 -> 30))
    assert(folded === Fold(2, 0, 3, 0, folded.bytes))
    assert(fold(shuffle, 8, Seq(1 -> 1, 2 -> 2, 4 -> 4)).rowsMerged === 2)
    assert(
      read(shuffle, 0, 2) === Seq(
        (0, Seq(7L, 8L), Map(2 -> 22, 4 -> 4)),
        (1, Seq(7L, 8L), Map(1 -> 11, 3 -> 30))))
  }

  test("a map output's own values of a key are its one record, not a merge") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    val folded = fold(shuffle, 1, Seq(1 -> 1, 1 -> 2, 1 -> 3, 3 -> 1))
    assert((folded.rows, folded.rowsMerged) === (2, 0))
    assert(fold(shuffle, 2, Seq(1 -> 4, 1 -> 5)).rowsMerged === 1)
  }

  test("a read seals what it reads: later folds go to a new segment") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    fold(shuffle, 1, Seq(1 -> 1, 3 -> 3))
    fold(shuffle, 2, Seq(1 -> 1, 3 -> 3))
    assert(read(shuffle, 1, 2) === Seq((1, Seq(1L, 2L), Map(1 -> 2, 3 -> 6))))
    fold(shuffle, 3, Seq(1 -> 5, 2 -> 2))
    fold(shuffle, 4, Seq(1 -> 5, 2 -> 2))
    // Partition 0 was not read yet: its segment holds every map output with rows for it.
    assert(
      read(shuffle, 0, 2) === Seq(
        (0, Seq(3L, 4L), Map(2 -> 4)),
        (1, Seq(1L, 2L), Map(1 -> 2, 3 -> 6)),
        (1, Seq(3L, 4L), Map(1 -> 10))))
  }

  test("records no fold merged into make no segment: their map outputs are read from files") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = newShuffle(memory)
    fold(shuffle, 1, Seq(1 -> 1))
    fold(shuffle, 2, Seq(3 -> 3))
    assert(read(shuffle, 0, 2).isEmpty)
    assert(memory.used === 0)
  }

  test("a task whose records do not fit folds nothing; a fold without room seals first") {
    val memory = new CombineMemory(4096)
    val shuffle = newShuffle(memory)
    val task = shuffle.newTaskRecords()
    assert(!(1 to 10000).forall(k => task.add(k % 2, (k, k))), "ten thousand records fit in 3 KiB")
    task.release()
    assert(memory.used === 0)
    // Two map outputs that fit alone, each merging into the other's keys.
    val keys = 1 to 12
    fold(shuffle, 1, keys.map(_ -> 1))
    fold(shuffle, 2, keys.map(_ -> 1))
    val segments = read(shuffle, 0, 2)
    assert(segments.flatMap(_._3).groupMapReduce(_._1)(_._2)(_ + _) === keys.map(_ -> 2).toMap)
  }

  test(
    "combining stops once two map outputs that could meet keys show little reduction, and " +
      "frees their records") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = newShuffle(memory)
    fold(shuffle, 1, (1 to 50).map(k => (1000 + k) -> 1))
    fold(shuffle, 2, (1 to 50).map(k => (2000 + k) -> 1))
    assert(shuffle.combining && memory.used > 0)
    fold(shuffle, 3, (1 to 50).map(k => (3000 + k) -> 1))
    assert(!shuffle.combining)
    assert(memory.used === 0)
    assert(read(shuffle, 0, 2).isEmpty)
    val repeating = newShuffle(new CombineMemory(1L << 20))
    (1 to 3).foreach(m => fold(repeating, m, (1 to 50).map(_ -> 1)))
    assert(repeating.combining)
  }

  test("one large map output that meets no key stops combining at once") {
    val rows = CombinedShuffle.RowsBeforeJudging.toInt
    val memory = new CombineMemory(1L << 30)
    val shuffle = newShuffle(memory)
    fold(shuffle, 1, (1 to rows).map(_ -> 1))
    fold(shuffle, 2, (1 to rows - 1).map(k => (rows + k) -> 1))
    assert(shuffle.combining, "judged on one map output smaller than RowsBeforeJudging")
    fold(shuffle, 3, (1 to rows).map(k => (3 * rows + k) -> 1))
    assert(!shuffle.combining)
    assert(memory.used === 0)
    val large = newShuffle(new CombineMemory(1L << 30))
    fold(large, 1, (1 to rows).map(_ -> 1))
    fold(large, 2, (1 to rows).map(k => (rows + k) -> 1))
    assert(!large.combining)
  }

  test(
    "until folds show reduction a map task keeps one partition in SampleStride; once they do, " +
      "every partition, and where keys do not repeat the verdict cost only the sample") {
    val stride = CombinedShuffle.SampleStride
    val partitions = 4 * stride
    val sampled = (0 until partitions).filter(_ % stride == 0)
    val repeatingSpec = new CountingSpec
    val repeating =
      newShuffle(new CombineMemory(1L << 30), numPartitions = partitions, spec = repeatingSpec)
    assert((0 until partitions).filter(repeating.keeps) === sampled)
    val keys = (0 until 2000).map(k => k -> 1)
    def foldAll(shuffle: CombinedShuffle, mapId: Long, records: Seq[(Int, Int)]): Fold = {
      val task = shuffle.newTaskRecords()
      try {
        records.foreach { case (k, v) =>
          val p = k % partitions
          if (shuffle.keeps(p)) assert(task.add(p, (k, v)))
        }
        shuffle.fold(mapId, mapId.toInt, task)
      } finally task.release()
    }
    assert(foldAll(repeating, 1, keys).partitions === sampled.size)
    assert(foldAll(repeating, 2, keys).partitions === sampled.size)
    assert(foldAll(repeating, 3, keys).partitions === sampled.size)
    assert(repeating.combining && (0 until partitions).forall(repeating.keeps))
    // Engines interpret until the verdict, and generate code once combining pays.
    assert(repeatingSpec.compiledEngines.get === 0)
    assert(foldAll(repeating, 4, keys).partitions === partitions)
    assert(repeatingSpec.compiledEngines.get === 1)

    val distinctSpec = new CountingSpec
    val distinct =
      newShuffle(new CombineMemory(1L << 30), numPartitions = partitions, spec = distinctSpec)
    val rows =
      (1 to 3).map(m => foldAll(distinct, m, keys.map { case (k, v) => (m * 10000 + k, v) }).rows)
    assert(!distinct.combining)
    assert(rows.forall(_ === keys.size / stride), rows)
    assert(distinctSpec.compiledEngines.get === 0)
    // Few partitions: no sample, every partition is kept from the first map output on.
    assert((0 until 2).forall(newShuffle(new CombineMemory(1L << 30)).keeps))
  }

  /** Bytes a map output's `records` take kept by its task, and folded into fresh records. */
  private def footprint(records: Seq[(Int, Int)]): (Long, Long) = {
    val memory = new CombineMemory(1L << 30)
    val shuffle = newShuffle(memory)
    val task = shuffle.newTaskRecords()
    records.foreach { case (k, v) => assert(task.add(k % 2, (k, v))) }
    val kept = memory.used
    shuffle.fold(1, 1, task)
    task.release()
    (kept, memory.used)
  }

  test(
    "folds that had to seal first (memory held elsewhere meanwhile) are not judged: combining " +
      "goes on and merges once there is room") {
    val keys = (1 to 200).map(_ -> 1)
    val (kept, held) = footprint(keys)
    // Room for a task's kept records beside another map output's folded ones (tasks may take
    // three quarters), until another shuffle's records take what leaves room only once map 1's
    // are sealed away.
    val capacity = (kept + held) * 4 / 3 + 64
    val memory = new CombineMemory(capacity)
    val shuffle = newShuffle(memory)
    fold(shuffle, 1, keys)
    val othersRecords = held / 2
    assert(memory.held.reserve(othersRecords))
    assert(fold(shuffle, 2, keys).rowsMerged === 0)
    memory.held.release(othersRecords)
    assert(shuffle.combining, "stopped after two folds that could not merge")
    (3 to 4).foreach(m => assert(fold(shuffle, m, keys).rowsMerged === keys.size))
    assert(shuffle.combining)
    val segments = read(shuffle, 0, 2)
    assert(segments.map(_._2).distinct === Seq(Seq(2L, 3L, 4L)))
    assert(segments.flatMap(_._3.values).toSet === Set(3))
  }

  test("a memory too small to hold two map outputs' records stops combining, saying why") {
    def keys(m: Int) = (1 to 200).map(k => (m * 1000 + k) -> 1)
    val (kept, held) = footprint(keys(0))
    // A fresh fold fits beside its task's kept records; a fold beside another map's does not.
    val memory = new CombineMemory(kept * 3 / 2 + held / 2)
    val shuffle = newShuffle(memory)
    (1 to CombinedShuffle.MapsWithoutRoom).foreach { m =>
      assert(shuffle.combining)
      assert(fold(shuffle, m, keys(m)).partitionsSkipped === 0)
    }
    assert(!shuffle.combining)
    assert(memory.used === 0)
  }

  test(
    "a map index folded again (its task ran again, with the same map id or another) forgets " +
      "its earlier attempt: never two attempts, nor the one Spark dropped, in a segment read") {
    for (rerunId <- Seq(1L, 11L)) {
      val shuffle = newShuffle(new CombineMemory(1L << 20))
      fold(shuffle, 1, Seq(1 -> 100, 2 -> 100), mapIndex = 0)
      fold(shuffle, 2, Seq(1 -> 1, 2 -> 1), mapIndex = 1)
      // A reduce task sealed both partitions with map index 0's first attempt in them.
      assert(read(shuffle, 0, 2).map(_._2) === Seq(Seq(1L, 2L), Seq(1L, 2L)))
      fold(shuffle, 3, Seq(1 -> 5, 2 -> 5), mapIndex = 2)
      // Map index 0 again (the old fetch protocol keeps its id 1; the default gives it 11).
      fold(shuffle, rerunId, Seq(1 -> 7, 2 -> 7), mapIndex = 0)
      fold(shuffle, 4, Seq(1 -> 1000, 2 -> 1000), mapIndex = 3)
      // Map index 4 runs again while its first attempt is in partition 1's open records: they
      // are dropped (maps 3, rerunId, 4 and 5 with them), and the new attempt folds alone.
      fold(shuffle, 5, Seq(1 -> 3), mapIndex = 4)
      fold(shuffle, 15, Seq(1 -> 9), mapIndex = 4)
      // What a reduce task reads: partition 0's one segment; partition 1's maps from their files.
      assert(
        read(shuffle, 0, 2) === Seq((0, Seq(3L, rerunId, 4L), Map(2 -> 1012))),
        s"rerun as map id $rerunId")
    }
  }

  test("segments move to disk when memory is short, and are read from there") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = newShuffle(memory, numPartitions = 2)
    fold(shuffle, 1, (1 to 20).map(_ -> 1))
    fold(shuffle, 2, (1 to 20).map(_ -> 2))
    shuffle.sealAll()
    shuffle.moveSegmentsToDisk()
    assert(memory.used === 0)
    assert(read(shuffle, 0, 2).map(_._3.values.sum).sum === 60)
  }

  test("removing the shuffle gives back all its memory") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = newShuffle(memory)
    fold(shuffle, 1, (1 to 100).map(_ -> 1))
    fold(shuffle, 2, (1 to 100).map(_ -> 1))
    read(shuffle, 0, 1)
    assert(memory.used > 0)
    shuffle.remove()
    assert(memory.used === 0 && !shuffle.combining)
  }
}
