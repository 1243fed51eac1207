package org.apache.spark.shuffle.adaptive.push.driver

import scala.concurrent.{Future, Promise}
import scala.concurrent.duration._

import org.roaringbitmap.longlong.Roaring64NavigableMap
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.push.protocol.MergedPartition

class MergeSummariesSuite extends AnyFunSuite {

  private val executors = (0 until 3).map(i => BlockManagerId(i.toString, s"host-$i", 7000))
  private val table = TableArithmetic.uniform(6, executors)

  private def maps(ids: Long*): Roaring64NavigableMap = Roaring64NavigableMap.bitmapOf(ids: _*)

  /** Whether each question said a map stage had ended, newest first. */
  private var saidEnded = List.empty[Boolean]

  /** Owner k merged `bytes` of each partition it owns, of maps 1 and 2 (and 3 for partition 0). */
  private def answers(silent: Set[String] = Set.empty)(
      owner: BlockManagerId,
      shuffleId: Int,
      mapStageEnded: Boolean): Future[Seq[MergedPartition]] = {
    synchronized(saidEnded ::= mapStageEnded)
    if (silent(owner.executorId)) Promise[Seq[MergedPartition]]().future
    else
      Future.successful(
        table
          .ranges(0, 6)
          .collect { case (`owner`, start, end) =>
            (start until end).map(p =>
              MergedPartition(p, 100L + p, 1, if (p == 0) maps(1, 2, 3) else maps(1, 2)))
          }
          .flatten)
  }

  test("a summary adds up the owners' partitions: bytes, chunks and merged map outputs") {
    var published = List.empty[Int]
    val summaries =
      new MergeSummaries(answers(), 1.second, _ => 1200L, s => published ::= s.shuffleId)
    try {
      summaries.register(4, () => Some(Seq(table)))
      val s = summaries.collect(4, Seq(table))
      assert(s.partitionBytes.toSeq === (0 until 6).map(100L + _))
      assert(s.mergedBytes === 615 && s.chunks === 6 && s.ownersAnswered === 3)
      assert(s.mapsMerged(0).toArray.toSeq === Seq(1L, 2L, 3L))
      assert(s.toMap("merged_ratio") === 615.0 / 1200)
      assert(s.stateBytes > 12 * 6 && s.stateBytes < 12 * 6 + 6 * 100)
      assert(summaries.summary(4).contains(s) && published === List(4))
      // At a map stage's end every owner hears that it ended; asked at another time, none does.
      assert(saidEnded === List.fill(3)(true))
      summaries.gather(4, Seq(table))
      assert(saidEnded.take(3) === List.fill(3)(false))
      // A removed shuffle's last summary is kept; none is made of it any more.
      summaries.remove(4)
      assert(summaries.summary(4).contains(s))
      summaries.collect(4, Seq(table))
      assert(published === List(4))
    } finally summaries.stop()
  }

  test("an owner that does not answer in time merged nothing as far as the summary knows") {
    val summaries = new MergeSummaries(answers(silent = Set("1")), 100.millis, _ => 0L, _ => ())
    try {
      summaries.register(4, () => Some(Seq(table)))
      val s = summaries.collect(4, Seq(table))
      assert(s.ownersAsked === 3 && s.ownersAnswered === 2)
      val (_, start, end) = table.ranges(0, 6).find(_._1.executorId == "1").get
      assert((start until end).forall(p => s.partitionBytes(p) == 0 && s.mapsMerged(p) == null))
      assert(s.toMap("merged_ratio") === 0.0, "no bytes known: no ratio")
    } finally summaries.stop()
  }

  test("a shuffle removed while its owners answer keeps no summary; the newest 32 are kept") {
    val summaries = new MergeSummaries(answers(), 1.second, _ => 0L, _ => ())
    try {
      summaries.collect(9, Seq(table))
      assert(summaries.summary(9).isEmpty)
      (100 until 140).foreach { id =>
        summaries.register(id, () => Some(Seq(table)))
        summaries.collect(id, Seq(table))
      }
      assert(summaries.all.keySet === (108 until 140).toSet)
    } finally summaries.stop()
  }
}
