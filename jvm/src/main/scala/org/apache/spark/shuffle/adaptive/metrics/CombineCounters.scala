package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

/**
 * What local reduction did, for the map and reduce tasks of a shuffle, an executor or the
 * application: each counter declared once, in [[CombineCounters.All]], with the name Python sees
 * and what it counts; merging, the map Python receives and the documentation derive from it.
 */
private[spark] final class CombineCounters extends Serializable {
  private val values = new Array[Long](CombineCounters.All.size)

  /**
   * The executors whose map tasks folded records: those a reduce task finds combined records at
   * (their ids, not a counter; `executors_combining`).
   */
  val combining: mutable.Set[String] = mutable.TreeSet.empty

  def apply(counter: CombineCounters.Counter): Long = values(counter.index)

  def add(counter: CombineCounters.Counter, n: Long): Unit = values(counter.index) += n

  /**
   * A map output's fold: partitions without room, records folded, of which `rowsMerged` met a
   * key held, the bytes of those that did not, and the bytes kept.
   */
  def folded(overflowed: Int, rows: Long, rowsMerged: Long, newBytes: Long, bytes: Long): Unit = {
    add(CombineCounters.MapsFolded, 1)
    add(CombineCounters.PartitionsOverflowed, overflowed)
    add(CombineCounters.RowsIn, rows)
    add(CombineCounters.RowsMerged, rowsMerged)
    add(CombineCounters.BytesIn, bytes)
    add(CombineCounters.NewRecordBytes, newBytes)
  }

  def isZero: Boolean = values.forall(_ == 0) && combining.isEmpty

  def merge(other: CombineCounters): Unit = {
    values.indices.foreach(i => values(i) += other.values(i))
    combining ++= other.combining
  }

  /** The counters by name, and `combine_ratio`: rows folded per combined row read. */
  def toMap: Map[String, Any] =
    CombineCounters.All.map(c => c.name -> values(c.index)).toMap +
      ("executors_combining" -> combining.toSeq) +
      ("combine_ratio" -> {
        val out = apply(CombineCounters.RowsOut)
        if (out == 0) 0.0 else apply(CombineCounters.RowsIn).toDouble / out
      })
}

private[spark] object CombineCounters {

  final case class Counter(index: Int, name: String, doc: String)

  private[this] var declared = Vector.empty[Counter]
  private[this] var tableRead = false

  private def counter(name: String, doc: String): Counter = synchronized {
    require(!tableRead, s"counter $name is declared after CombineCounters.All was read")
    val c = Counter(declared.size, name, doc)
    declared :+= c
    c
  }

  val MapsFolded: Counter = counter(
    "maps_folded",
    "map outputs whose kept records were folded into their executor's combined records once " +
      "their task committed (their files hold only what did not fit)")
  val MapsNotFolded: Counter = counter(
    "maps_not_folded",
    "map outputs of combining shuffles written whole to their files: folding did not pay on " +
      "their executor then, or their task ran again (a retry, a speculative copy, a stage " +
      "resubmitted for lost map outputs)")
  val PartitionsOverflowed: Counter = counter(
    "partitions_overflowed",
    "partitions of folded map outputs that found no room in combine memory: each is a segment " +
      "of that map output's records alone")
  val RowsIn: Counter = counter("rows_in", "records folded")
  val RowsMerged: Counter = counter(
    "rows_merged",
    "records folded that met a key their executor held already: neither written nor read")
  val BytesIn: Counter =
    counter("bytes_in", "bytes of the records folded, as the map tasks kept them")
  val NewRecordBytes: Counter = counter(
    "new_record_bytes",
    "bytes of the folded records that met no key held, each a new combined record: what the " +
      "segments hold before they are serialized (the plugin's SQL exchange adds them to the " +
      "shuffle's statistics, which AQE plans the next stage by)")
  val SegmentsRead: Counter = counter(
    "segments_read",
    "combined segments reduce tasks read: one partition's combined records of several map outputs")
  val RowsOut: Counter = counter("rows_out", "combined rows in those segments")
  val BytesOut: Counter = counter("bytes_out", "bytes of those segments, as read")
  val StaleSegments: Counter = counter(
    "stale_segments",
    "segments reduce tasks skipped because they hold only map outputs Spark no longer keeps " +
      "(map tasks that ran again: their new attempts are in their files)")
  val FailedReads: Counter = counter(
    "failed_reads",
    "combined reads that failed their reduce task with a fetch failure: not fetched, corrupt, " +
      "lost, or holding a map output the task needs together with one it must not read. Spark " +
      "then runs that executor's map tasks again, whole")

  /** Every counter, in declaration order; one declared after it is first read fails. */
  lazy val All: Seq[Counter] = synchronized {
    tableRead = true
    declared
  }

  /**
   * What the message of a fetch failure of combined records says, which the driver counts them by
   * ([[FailedReads]]): a failed task's own counters never reach it.
   */
  val OnlyCopy = "the only copy of what its map outputs folded"

  /** What Python receives besides the counters: names and meanings. */
  val Extra: Seq[(String, String)] = Seq(
    "executors_combining" -> ("the executors whose map tasks folded records: those a reduce " +
      "task finds combined records at"),
    "combine_ratio" -> "rows_in / rows_out: rows folded per combined row read; 0.0 before a read")
}
