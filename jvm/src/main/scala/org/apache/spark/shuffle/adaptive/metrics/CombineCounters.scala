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
   * The executors whose map tasks' folds met keys held there: those a reduce task finds combined
   * records at (their ids, not a counter; `executors_combining`).
   */
  val combining: mutable.Set[String] = mutable.TreeSet.empty

  def apply(counter: CombineCounters.Counter): Long = values(counter.index)

  def add(counter: CombineCounters.Counter, n: Long): Unit = values(counter.index) += n

  /** A map output's fold: its rows, of which `rowsMerged` met a key held, and their bytes. */
  def folded(partitionsSkipped: Long, rows: Long, rowsMerged: Long, bytes: Long): Unit = {
    add(CombineCounters.MapsFolded, 1)
    add(CombineCounters.PartitionsSkipped, partitionsSkipped)
    add(CombineCounters.RowsIn, rows)
    add(CombineCounters.RowsMerged, rowsMerged)
    add(CombineCounters.BytesIn, bytes)
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
    "map outputs folded into their executor's combined records once their task committed")
  val MapsNotFolded: Counter = counter(
    "maps_not_folded",
    "map outputs of combining shuffles not folded: their records did not fit in the task's " +
      "share of combine memory (they are read from their files)")
  val PartitionsSkipped: Counter = counter(
    "partitions_skipped",
    "partitions of folded map outputs left out for want of combine memory (read from files)")
  val RowsIn: Counter = counter("rows_in", "rows folded")
  val RowsMerged: Counter = counter(
    "rows_merged",
    "rows folded that met a key their executor held already (what local reduction saved)")
  val BytesIn: Counter =
    counter("bytes_in", "bytes of the rows folded, as the map tasks kept them")
  val SegmentsRead: Counter = counter(
    "segments_read",
    "combined segments reduce tasks read: one partition's combined records of several map outputs")
  val RowsOut: Counter = counter("rows_out", "combined rows in those segments")
  val BytesOut: Counter = counter("bytes_out", "bytes of those segments, as read")
  val BlocksReplaced: Counter = counter(
    "blocks_replaced",
    "map-output blocks reduce tasks did not read because a segment held their rows")
  val BytesReplaced: Counter =
    counter("bytes_replaced", "bytes of those blocks, as their map outputs wrote them")
  val BlocksFromFiles: Counter = counter(
    "blocks_from_files",
    "blocks of executors asked for combined records that were read from their map outputs " +
      "instead: not folded, or held by a segment that also holds a map output the task does " +
      "not read (an attempt Spark did not keep, a map outside its range)")
  val CorruptSegments: Counter = counter(
    "corrupt_segments",
    "segments whose checksum did not match; their blocks were read from their map outputs")
  val ReadFallbacks: Counter = counter(
    "read_fallbacks",
    "combined reads that could not be fetched; their blocks were read from their map outputs")

  /** Every counter, in declaration order; one declared after it is first read fails. */
  lazy val All: Seq[Counter] = synchronized {
    tableRead = true
    declared
  }

  /** What Python receives besides the counters: names and meanings. */
  val Extra: Seq[(String, String)] = Seq(
    "executors_combining" -> ("the executors whose map tasks' folds met keys held there: " +
      "those a reduce task finds combined records at"),
    "combine_ratio" -> "rows_in / rows_out: rows folded per combined row read; 0.0 before a read")
}
