package org.apache.spark.shuffle.adaptive.combine.store

import java.io.{ByteArrayInputStream, File}
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{Aggregator, SparkConf}
import org.apache.spark.network.util.{MapConfigProvider, TransportConf}
import org.apache.spark.serializer.JavaSerializer
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.combine.protocol.CombinedPayload
import org.apache.spark.shuffle.adaptive.combine.rdd.{AggregatorCombine, NumberKind}
import org.apache.spark.shuffle.adaptive.combine.map.{KeySample, TaskSample, Verdict}
import org.apache.spark.shuffle.adaptive.combine.CombineSpec

/**
 * One executor's combined records of a shuffle, with an RDD aggregator (sums): folds of map
 * outputs merge by key, a read seals what it reads into segments naming the map outputs they
 * hold (the only copy of what they folded), later folds go to new segments, memory bounds what
 * is kept, and the verdict judges before folding, turns folding off where merges do not pay and
 * on again where they do.
 */
class CombinedShuffleSuite extends AnyFunSuite {

  private val serializer = new JavaSerializer(new SparkConf)
  private val aggregator = new Aggregator[Any, Any, Any](
    v => v,
    (c, v) => c.asInstanceOf[Int] + v.asInstanceOf[Int],
    (a, b) => a.asInstanceOf[Int] + b.asInstanceOf[Int])
  private val sum = AggregatorCombine(aggregator, None)
  private val numbers = AggregatorCombine(aggregator, Some((NumberKind.Ints, NumberKind.Ints)))
  private val transport = new TransportConf("shuffle", MapConfigProvider.EMPTY)
  private val dir = Files.createTempDirectory("combined-shuffle-suite").toFile
  dir.deleteOnExit()

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

  /** Map output `mapId` keeping `records` (key, value), key k to partition k % 2, then its fold. */
  private def fold(shuffle: CombinedShuffle, mapId: Long, records: Seq[(Int, Int)]): Fold = {
    val task = shuffle.newTaskRecords()
    try {
      records.foreach { case (k, v) => assert(task.keep(k % 2, (k, v))) }
      shuffle.fold(mapId, task)
    } finally task.release()
  }

  /** Each segment of partitions `[start, end)`: its partition, map ids and records. */
  private def read(
      shuffle: CombinedShuffle,
      start: Int,
      end: Int): Seq[(Int, Seq[Long], Map[Int, Int])] = {
    val data = shuffle.read(start, end).nioByteBuffer()
    val (answer, header) = CombinedPayload.decode(data)
    assert(answer.known && answer.lost.isEmpty)
    var offset = data.position() + header
    answer.segments.map { s =>
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
      (s.partition, s.mapIds.toSeq.sorted, records)
    }
  }

  private val mapIndexes = new java.util.concurrent.atomic.AtomicInteger

  /** The map index of a map task not run before. */
  private def newMapIndex(): Int = 1000 + mapIndexes.incrementAndGet()

  /** A judging map task writing `keys`: its role, then its sample judged. */
  private def judge(shuffle: CombinedShuffle, keys: Seq[Int]): Unit = {
    val (role, round) = shuffle.nextMap(newMapIndex())
    assert(role === Verdict.Judge)
    val sample = new TaskSample
    keys.foreach(k => sample.offer(sum.keyHash(k)))
    shuffle.judge(round, sample)
  }

  /** Two judging map tasks of keys that repeat: folding starts. */
  private def folding(shuffle: CombinedShuffle): CombinedShuffle = {
    judge(shuffle, 1 to 1000)
    judge(shuffle, 1 to 1000)
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Fold)
    shuffle
  }

  /** Every key's value over the segments of `shuffle`'s two partitions. */
  private def sums(shuffle: CombinedShuffle): Map[Int, Int] =
    read(shuffle, 0, 2).flatMap(_._3).groupMapReduce(_._1)(_._2)(_ + _)

  test("map outputs fold into one record per key, read as a segment per partition") {
    for (spec <- Seq(sum, numbers)) {
      val memory = new CombineMemory(1L << 20)
      val shuffle = newShuffle(memory, spec = spec)
      val folded = fold(shuffle, 7, Seq(1 -> 10, 2 -> 20, 3 -> 30))
      assert((folded.partitionsOverflowed, folded.rows, folded.rowsMerged) === ((0, 3, 0)))
      assert(folded.newBytes > 0)
      val again = fold(shuffle, 8, Seq(1 -> 1, 2 -> 2, 4 -> 4))
      assert((again.rowsMerged, again.newBytes < folded.newBytes) === ((2, true)), spec.kind)
      assert(
        read(shuffle, 0, 2) === Seq(
          (0, Seq(7L, 8L), Map(2 -> 22, 4 -> 4)),
          (1, Seq(7L, 8L), Map(1 -> 11, 3 -> 30))),
        spec.kind)
      shuffle.remove()
      assert(memory.used === 0, spec.kind)
    }
  }

  test("a map output's own values of a key are its one record, not a merge") {
    for (spec <- Seq(sum, numbers)) {
      val shuffle = newShuffle(new CombineMemory(1L << 20), spec = spec)
      val folded = fold(shuffle, 1, Seq(1 -> 1, 1 -> 2, 1 -> 3, 3 -> 1))
      assert((folded.rows, folded.rowsMerged) === ((2, 0)))
      assert(fold(shuffle, 2, Seq(1 -> 4, 1 -> 5)).rowsMerged === 1)
      assert(sums(shuffle) === Map(1 -> 15, 3 -> 1), spec.kind)
    }
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

  test("records no fold merged into are a segment all the same: it is their only copy") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    fold(shuffle, 1, Seq(1 -> 1))
    fold(shuffle, 2, Seq(3 -> 3))
    assert(read(shuffle, 0, 2) === Seq((1, Seq(1L, 2L), Map(1 -> 1, 3 -> 3))))
  }

  test(
    "a task keeps what fits and no more; a fold without room seals first, and a partition " +
      "that still finds none is a segment of its map output alone") {
    val memory = new CombineMemory(4096)
    val shuffle = newShuffle(memory)
    val task = shuffle.newTaskRecords()
    assert(!(1 to 10000).forall(k => task.keep(k % 2, (k, k))), "ten thousand records fit in 3 KiB")
    task.release()
    assert(memory.used === 0)
    // Two map outputs that fit alone, each merging into the other's keys.
    val keys = 1 to 12
    fold(shuffle, 1, keys.map(_ -> 1))
    fold(shuffle, 2, keys.map(_ -> 1))
    assert(sums(shuffle) === keys.map(_ -> 2).toMap)
    // Once map 3's records are sealed, another shuffle's take all the rest: map 4's fold finds
    // no room, even after sealing.
    val full = new CombineMemory(4096)
    val crowded = newShuffle(full)
    fold(crowded, 3, keys.map(_ -> 1))
    crowded.sealAll()
    crowded.moveSegmentsToDisk()
    val kept = crowded.newTaskRecords()
    keys.foreach(k => assert(kept.keep(k % 2, (k, 5))))
    while (full.held.reserve(16)) {}
    val overflowed = crowded.fold(4, kept)
    kept.release()
    assert(overflowed.partitionsOverflowed === 2 && overflowed.rowsMerged === 0)
    assert(
      read(crowded, 0, 2).filter(_._2 == Seq(4L)).flatMap(_._3).toMap === keys.map(_ -> 5).toMap)
  }

  test(
    "map tasks judge first, writing their files: where their sampled keys repeat, folding " +
      "starts with the next map task; where they do not, map tasks write their files") {
    val repeating = newShuffle(new CombineMemory(1L << 20))
    judge(repeating, 1 to 1000)
    assert(repeating.nextMap(newMapIndex())._1 === Verdict.Judge, "one map output decides nothing")
    judge(repeating, 1 to 1000)
    assert(repeating.nextMap(newMapIndex())._1 === Verdict.Fold)
    val distinct = newShuffle(new CombineMemory(1L << 20))
    judge(distinct, 1 to 1000)
    judge(distinct, 1001 to 2000)
    assert(distinct.nextMap(newMapIndex())._1 === Verdict.Write)
    // A tenth of the keys met: below the break-even share of objects.
    val few = newShuffle(new CombineMemory(1L << 20))
    judge(few, 1 to 1000)
    judge(few, 901 to 1900)
    assert(few.nextMap(newMapIndex())._1 === Verdict.Write)
  }

  test(
    "a judging map task looks its keys up in the earlier ones' sample as it writes them: enough " +
      "of them that show folding pays decide part way, and it folds the rest") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    assert(shuffle.sampleOf(0).isEmpty)
    judge(shuffle, 1 to 20000)
    val (role, round) = shuffle.nextMap(newMapIndex())
    assert(role === Verdict.Judge)
    val (seen, level) = shuffle.sampleOf(round).get
    val task = new TaskSample
    val looked = (1 to 20000).iterator
      .map(sum.keyHash)
      .filter(task.offer)
      .filter(KeySample.inLevel(_, level))
      .take(Verdict.EarlyKeys)
      .toSeq
    assert(looked.size === Verdict.EarlyKeys && looked.forall(seen.contains))
    // A share too small decides nothing yet: a task's first keys may be a biased sample.
    assert(!shuffle.foldEarly(round, looked.size, 0))
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Judge)
    assert(shuffle.foldEarly(round, looked.size, looked.size))
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Fold)
    // Decided: the round's later judgements change nothing.
    val late = new TaskSample
    (30001 to 40000).foreach(k => late.offer(sum.keyHash(k)))
    shuffle.judge(round, late)
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Fold)
  }

  test(
    "folding goes off once a window of map outputs that could meet keys shows too few " +
      "merges, and its records go to disk; where keys repeat it stays on") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = folding(newShuffle(memory))
    fold(shuffle, 1, (1 to 50).map(k => (1000 + k) -> 1))
    fold(shuffle, 2, (1 to 50).map(k => (2000 + k) -> 1))
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Fold && memory.used > 0)
    fold(shuffle, 3, (1 to 50).map(k => (3000 + k) -> 1))
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Write)
    assert(memory.used === 0)
    assert(sums(shuffle) === (1 to 3).flatMap(m => (1 to 50).map(k => (m * 1000 + k) -> 1)).toMap)
    val repeating = folding(newShuffle(new CombineMemory(1L << 20)))
    (1 to 5).foreach(m => fold(repeating, m, (1 to 50).map(_ -> 1)))
    assert(repeating.nextMap(newMapIndex())._1 === Verdict.Fold)
  }

  test(
    "a map index starts to fold or judge once on an executor: a task run again there writes " +
      "its file whole") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    assert(shuffle.nextMap(1)._1 === Verdict.Judge)
    assert(shuffle.nextMap(1)._1 === Verdict.Write)
    folding(shuffle)
    assert(shuffle.nextMap(7)._1 === Verdict.Fold)
    assert(shuffle.nextMap(7)._1 === Verdict.Write)
    assert(shuffle.nextMap(8)._1 === Verdict.Fold)
  }

  test("one large map output that meets no key is judged on its own") {
    val rows = Verdict.RowsPerWindow.toInt
    val shuffle = folding(newShuffle(new CombineMemory(1L << 30)))
    fold(shuffle, 1, (1 to rows).map(_ -> 1))
    fold(shuffle, 2, (1 to rows - 1).map(k => (rows + k) -> 1))
    assert(
      shuffle.nextMap(newMapIndex())._1 === Verdict.Fold,
      "judged on one map output smaller than RowsPerWindow")
    fold(shuffle, 3, (1 to rows).map(k => (3 * rows + k) -> 1))
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Write)
  }

  test(
    "while off, the executor judges again now and then: keys that repeat now turn folding on, " +
      "keys that still do not wait twice as long for the next judgement") {
    val shuffle = newShuffle(new CombineMemory(1L << 20))
    judge(shuffle, 1 to 1000)
    judge(shuffle, 1001 to 2000)

    /** Map tasks that write until one judges, which it does (not counted). */
    def untilJudging(): Int =
      Iterator.continually(shuffle.nextMap(newMapIndex())._1).takeWhile(_ == Verdict.Write).size
    val first = Verdict.FirstJudgeInterval
    assert(untilJudging() === first - 1)
    // That map task judges, finding the new round's sample empty; then keys that still do not
    // repeat.
    val sample = new TaskSample
    (3001 to 4000).foreach(k => sample.offer(sum.keyHash(k)))
    shuffle.judge(1, sample)
    judge(shuffle, 4001 to 5000)
    assert(untilJudging() === 2 * first - 1)
    val again = new TaskSample
    (1 to 1000).foreach(k => again.offer(sum.keyHash(k)))
    shuffle.judge(2, again)
    judge(shuffle, 1 to 1000)
    assert((1 to 40).forall(_ => shuffle.nextMap(newMapIndex())._1 == Verdict.Fold))
  }

  test(
    "a fold that finds no room part way seals the records and goes on into fresh ones: its " +
      "records are in two segments of a partition, each record in one") {
    val memory = new CombineMemory(1L << 20)
    val shuffle = folding(newShuffle(memory))
    fold(shuffle, 1, (1 to 200).map(_ -> 1))
    // Map 2's keys are even (partition 0): half of them map 1's.
    val task = shuffle.newTaskRecords()
    (2 to 400 by 2).foreach(k => assert(task.keep(0, (k, 1))))
    // Another shuffle's records take the rest: keys 202 to 400 find no room to grow into until
    // map 1's records are sealed.
    var others = 0L
    while (memory.held.reserve(64)) others += 64
    val folded = shuffle.fold(2, task)
    task.release()
    memory.held.release(others)
    assert((folded.partitionsOverflowed, folded.rows, folded.rowsMerged) === ((0, 200, 100)))
    val expected =
      (1 to 200).map(_ -> 1).toMap ++ (2 to 400 by 2).map(k => k -> (if (k <= 200) 2 else 1))
    assert(sums(shuffle) === expected)
    assert(
      read(shuffle, 0, 1).map(_._2) === Seq(Seq(1L, 2L), Seq(2L)),
      "partition 0: maps 1 and 2 sealed, then the rest of map 2")
  }

  test(
    "folds that never meet records holding another map output's (each sealed away first, as " +
      "when the memory holds less than two map outputs' records) turn folding off") {
    val shuffle = folding(newShuffle(new CombineMemory(1L << 20)))
    (1 to Verdict.FoldsWithoutMeeting).foreach { m =>
      assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Fold)
      shuffle.sealAll()
      assert(fold(shuffle, m, (1 to 200).map(_ -> 1)).rowsMerged === 0)
    }
    assert(shuffle.nextMap(newMapIndex())._1 === Verdict.Write)
    assert(sums(shuffle) === (1 to 200).map(_ -> Verdict.FoldsWithoutMeeting).toMap)
  }

  test(
    "a fold that throws half way loses the records it folded into: the map outputs folded " +
      "there are answered as lost, and the error fails the map task") {
    val failing = AggregatorCombine(
      new Aggregator[Any, Any, Any](
        v => v,
        (c, v) => c.asInstanceOf[Int] + v.asInstanceOf[Int],
        (a, b) =>
          if (b.asInstanceOf[Int] < 0) throw new ArithmeticException("overflow")
          else a.asInstanceOf[Int] + b.asInstanceOf[Int]),
      None)
    val memory = new CombineMemory(1L << 20)
    val shuffle = newShuffle(memory, spec = failing)
    fold(shuffle, 1, Seq(1 -> 1, 2 -> 1))
    fold(shuffle, 2, Seq(1 -> 1, 2 -> 1))
    val e = intercept[ArithmeticException](fold(shuffle, 3, Seq(2 -> 1, 1 -> -1)))
    assert(e.getMessage === "overflow")
    val (answer, _) = CombinedPayload.decode(shuffle.read(0, 2).nioByteBuffer())
    assert(answer.lost.map { case (p, ids) => p -> ids.toSeq.sorted } === Seq(1 -> Seq(1L, 2L, 3L)))
    // Partition 0 took map 3's rows before partition 1 failed: its segment names map 3, which
    // Spark never keeps (its task failed), so no reduce task reads it.
    assert(
      answer.segments.map(s => s.partition -> s.mapIds.toSeq.sorted) === Seq(0 -> Seq(1L, 2L, 3L)))
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

  test("removing the shuffle gives back all its memory; a read then says it holds nothing") {
    for (spec <- Seq(sum, numbers)) {
      val memory = new CombineMemory(1L << 20)
      val shuffle = newShuffle(memory, spec = spec)
      fold(shuffle, 1, (1 to 100).map(_ -> 1))
      fold(shuffle, 2, (1 to 100).map(_ -> 1))
      read(shuffle, 0, 1)
      assert(memory.used > 0)
      shuffle.remove()
      assert(memory.used === 0 && shuffle.nextMap(newMapIndex())._1 === Verdict.Write)
      assert(!CombinedPayload.decode(shuffle.read(0, 2).nioByteBuffer())._1.known)
    }
  }

  test("records of the wrong kind for number storage are refused, and written instead") {
    val shuffle = newShuffle(new CombineMemory(1L << 20), spec = numbers)
    val task = shuffle.newTaskRecords()
    try {
      assert(task.keep(1, (1, 1)))
      assert(!task.keep(1, (1L, 1)), "a long key for int storage")
      assert(!task.keep(0, (2, "two")), "a combiner that is not an int")
    } finally task.release()
  }
}
