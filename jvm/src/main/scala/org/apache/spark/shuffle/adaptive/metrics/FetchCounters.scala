package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

/**
 * What the plugin's fetcher did, for one reduce task or, merged, for an executor or the
 * application. Updated by the task thread only; merged on the driver. Each counter is declared
 * once, in [[FetchCounters.All]], with the name Python sees and what it counts; how counters
 * merge, whether they are zero and what Python receives ([[toMap]]) follow from that table,
 * and so does `docs/metrics.md`.
 */
private[spark] final class FetchCounters extends Serializable {
  import FetchCounters._

  // One slot per counter of each kind: every task's counters travel to the driver.
  private[this] val longs = new Array[Long](slots(LongSlots))
  private[this] val doubles = new Array[Double](slots(DoubleSlots))
  private[this] val keyed = Array.fill(slots(KeyedSlots))(mutable.TreeMap.empty[String, Long])
  private[this] val keyedDoubles =
    Array.fill(slots(KeyedDoubleSlots))(mutable.TreeMap.empty[String, Double])
  private[this] val labels = Array.fill(slots(LabelSlots))(mutable.TreeMap.empty[String, String])

  /**
   * One task's counters only (merged counters keep -1): the reduce partitions it read,
   * `[startPartition, endPartition)`, for the skew report's exact partition sizes.
   */
  var startPartition = -1
  var endPartition = -1

  /** What local reduction did: map tasks' folds and reduce tasks' combined reads. */
  val combine = new CombineCounters

  def apply(c: Scalar): Long = longs(c.index)
  def apply(c: Time): Double = doubles(c.index)
  def apply(c: PerKey): collection.Map[String, Long] = keyed(c.index)
  def apply(c: TimePerKey): collection.Map[String, Double] = keyedDoubles(c.index)
  def apply(c: Label): collection.Map[String, String] = labels(c.index)

  def add(c: Total, n: Long): Unit = longs(c.index) += n

  /** A value of `c` observed: the largest (a [[Peak]]) or the least non-zero (a [[Floor]]). */
  def observe(c: Scalar, v: Long): Unit = longs(c.index) = c.combine(longs(c.index), v)

  def add(c: Time, ms: Double): Unit = doubles(c.index) += ms
  def add(c: PerKey, key: String, n: Long): Unit =
    keyed(c.index)(key) = keyed(c.index).getOrElse(key, 0L) + n
  def add(c: TimePerKey, key: String, v: Double): Unit =
    keyedDoubles(c.index)(key) = keyedDoubles(c.index).getOrElse(key, 0.0) + v
  def label(c: Label, key: String, value: String): Unit = labels(c.index)(key) = value

  def isZero: Boolean = All.forall {
    case c: Scalar => longs(c.index) == 0
    case c: Time => doubles(c.index) == 0
    case c: PerKey => keyed(c.index).isEmpty
    case c: TimePerKey => keyedDoubles(c.index).isEmpty
    case c: Label => labels(c.index).isEmpty
  } && combine.isZero

  def merge(other: FetchCounters): Unit = {
    All.foreach {
      case c: Scalar => observe(c, other(c))
      case c: Time => add(c, other(c))
      case c: PerKey => other(c).foreach { case (k, v) => add(c, k, v) }
      case c: TimePerKey => other(c).foreach { case (k, v) => add(c, k, v) }
      case c: Label => labels(c.index) ++= other(c)
    }
    combine.merge(other.combine)
  }

  def copy(): FetchCounters = {
    val c = new FetchCounters
    c.merge(this)
    c
  }

  def served(source: String, transport: String, bytes: Long): Unit = {
    add(BytesBySource, source, bytes)
    add(BlocksBySource, source, 1)
    add(BytesByTransport, transport, bytes)
    add(BlocksByTransport, transport, 1)
  }

  def servedFromStore(source: String, bytes: Long, crossedTwice: Boolean): Unit = {
    add(BytesFromStores, bytes)
    add(BlocksFromStores, 1)
    add(BytesFromStoresBySource, source, bytes)
    if (crossedTwice) add(BytesCrossedTwice, bytes)
  }

  def requested(path: String): Unit = {
    add(Requests, 1)
    add(RequestsByTransport, path, 1)
  }

  /** The task's executor observes `bytesPerSecond` from the remote `source` as the task ends. */
  def rateObserved(source: String, bytesPerSecond: Double): Unit =
    add(RateBytesBySource, source, this(BytesBySource).getOrElse(source, 0L) * bytesPerSecond)

  /** Bytes per second observed from each remote source (see [[rateObserved]]). */
  def observedRateBySource: Map[String, Double] = this(RateBytesBySource).iterator.collect {
    case (source, rateBytes) if this(BytesBySource).getOrElse(source, 0L) > 0 =>
      source -> rateBytes / this(BytesBySource)(source)
  }.toMap

  def limitObserved(min: Long, max: Long, changes: Long): Unit = {
    observe(LimitMin, min)
    observe(LimitMax, max)
    add(LimitChanges, changes)
  }

  /** A task on `self` ends (these counters are its own). */
  def taskRead(self: String): Unit =
    add(TasksByRemoteSources, this(BytesBySource).keysIterator.count(_ != self).toString, 1)

  /** The counters as Python receives them (snake_case keys, plain values). */
  def toMap: Map[String, Any] =
    All.iterator
      .filterNot(_.internal)
      .map {
        case c: Scalar => c.name -> longs(c.index)
        case c: Time => c.name -> doubles(c.index)
        case c: PerKey => c.name -> keyed(c.index).toMap
        case c: TimePerKey => c.name -> keyedDoubles(c.index).toMap
        case c: Label => c.name -> labels(c.index).toMap
      }
      .toMap ++ DerivedValues.map(d => d.name -> d.value(this)) + ("combine" -> combine.toMap)

  override def toString: String = {
    val bytes = this(BytesByTransport).map { case (k, v) => s"$k=$v" }.mkString(",")
    s"tasks=${this(ReduceTasks)} bytes[$bytes] requests=${this(Requests)} " +
      s"wait=${this(FetchWaitMs)}ms peakInFlight=${this(PeakBytesInFlight)} " +
      s"limit=[${this(LimitMin)},${this(LimitMax)}] changes=${this(LimitChanges)}"
  }
}

private[spark] object FetchCounters {

  /** The transport name of blocks read from the reduce task's own executor. */
  val Local = "local"

  /** `internal` counters only feed a [[Derived]] value; Python does not see them. */
  /** `index`: the counter's slot among those of its kind (`slotsOf`, one of the `*Slots`). */
  sealed abstract class Counter(
      val name: String,
      val doc: String,
      val internal: Boolean,
      slotsOf: Int) {
    val index: Int = declare(this, slotsOf)
  }

  /** A count; merged how its kind says. */
  sealed abstract class Scalar(name: String, doc: String)
      extends Counter(name, doc, false, LongSlots) {
    def combine(held: Long, seen: Long): Long
  }

  /** Summed over tasks. */
  final class Total(name: String, doc: String) extends Scalar(name, doc) {
    def combine(held: Long, seen: Long): Long = held + seen
  }

  /** The largest any task saw. */
  final class Peak(name: String, doc: String) extends Scalar(name, doc) {
    def combine(held: Long, seen: Long): Long = math.max(held, seen)
  }

  /** The least non-zero value any task saw; 0 until one did. */
  final class Floor(name: String, doc: String) extends Scalar(name, doc) {
    def combine(held: Long, seen: Long): Long =
      if (held == 0) seen else if (seen == 0) held else math.min(held, seen)
  }

  /** Milliseconds (or byte-milliseconds), summed. */
  final class Time(name: String, doc: String, internal: Boolean = false)
      extends Counter(name, doc, internal, DoubleSlots)

  /** A count per key (an executor id, a transport), summed per key. */
  final class PerKey(name: String, doc: String) extends Counter(name, doc, false, KeyedSlots)

  /** Milliseconds (or the like) per key, summed per key. */
  final class TimePerKey(name: String, doc: String, internal: Boolean = false)
      extends Counter(name, doc, internal, KeyedDoubleSlots)

  /** A text per key; the latest wins. */
  final class Label(name: String, doc: String) extends Counter(name, doc, false, LabelSlots)

  /** A value Python receives that is computed from the counters. */
  final case class Derived(name: String, doc: String, value: FetchCounters => Any)

  private val LongSlots = 0
  private val DoubleSlots = 1
  private val KeyedSlots = 2
  private val KeyedDoubleSlots = 3
  private val LabelSlots = 4

  private[this] var declared = Vector.empty[Counter]
  private[this] val declaredOf = new Array[Int](5)
  private[this] var tableRead = false

  private def declare(c: Counter, slotsOf: Int): Int = synchronized {
    require(!tableRead, s"counter ${c.name} is declared after FetchCounters.All was read")
    declared :+= c
    declaredOf(slotsOf) += 1
    declaredOf(slotsOf) - 1
  }

  /** How many counters of one kind there are (the `*Slots`), once every one is declared. */
  private def slots(kind: Int): Int = {
    All
    declaredOf(kind)
  }

  val ReduceTasks = new Total("reduce_tasks", "fetchers that ran (one per reduce task)")
  val BytesBySource = new PerKey(
    "bytes_by_source",
    "bytes served per executor id they came from (this executor's own blocks included)")
  val BlocksBySource = new PerKey("blocks_by_source", "blocks served per executor id")
  val BytesByTransport = new PerKey(
    "bytes_by_transport",
    "bytes served per path: `local` (this executor's files), `host-local` (the files of " +
      "another executor on this host), `netty`, or `ucx` (one-sided reads of the serving " +
      "executor's memory)")
  val BlocksByTransport = new PerKey("blocks_by_transport", "blocks served per path")
  val BytesFromStores = new Total(
    "bytes_from_stores",
    "mode=push: bytes read out of merged chunks in an owner's memory (this executor's or " +
      "another's) rather than from a map-output file")
  val BlocksFromStores = new Total("blocks_from_stores", "mode=push: blocks read so")
  val BytesFromStoresBySource =
    new PerKey("bytes_from_stores_by_source", "mode=push: those bytes per executor that held them")
  val BytesCrossedTwice = new Total(
    "bytes_crossed_twice",
    "bytes read from another executor's store that had come there from a third (pushed or " +
      "handed off): they crossed the network after the map task and again now")
  val StoredReduceTasks = new Total("stored_reduce_tasks", "tasks that read from stores")
  val StoredReduceTasksOnOwner = new Total(
    "stored_reduce_tasks_on_owner",
    "of those, the tasks that ran on the executor whose store held most of the bytes they " +
      "read from stores (in mode=push, their partition's owner)")
  val BytesAtOwner = new Total(
    "bytes_at_owner",
    "mode=push: of bytes_from_stores, those held by the task's own executor: read at their " +
      "owner, without crossing the network")
  val ChunksRead = new Total(
    "chunks_read",
    "mode=push: merged reads, each one request or local read of a chunk or of a partition " +
      "range's chunks")
  val ChunkFallbacks = new Total(
    "chunk_fallbacks",
    "merged reads that could not be fetched, whose blocks were read from their map outputs")
  val ChunksAtPeers = new Total(
    "chunks_at_peers",
    "chunks planned at a peer, where their owner had handed them off (remote-memory spill)")
  val ChunksInRanges =
    new Total("chunks_in_ranges", "chunks planned as part of a partition range's one request")
  val ChunksOneSided = new Total(
    "chunks_one_sided",
    "chunks planned as one-sided reads (UCX) of their holder's memory")
  val Requests = new Total("requests", "requests sent to other executors")
  val RequestsByTransport =
    new PerKey("requests_by_transport", "requests per path they took first")
  val TransportFallbacks = new Total(
    "transport_fallbacks",
    "blocks their first path could not serve (UCX: no region for the map output; " +
      "host-local: files not readable) that went to the next transport instead")
  val DirectMemoryDeferrals =
    new Total("direct_memory_deferrals", "blocks deferred because Netty ran out of direct memory")
  val CorruptRefetches =
    new Total("corrupt_refetches", "blocks fetched a second time after a corrupt first copy")
  val FetchWaitMs = new Total(
    "fetch_wait_ms",
    "time tasks blocked waiting for remote blocks (as Spark's fetch wait time)")
  val RequestsToDisk = new Total(
    "requests_to_disk",
    "requests whose blocks were streamed to disk: larger than " +
      "spark.network.maxRemoteBlockSizeFetchToMem, or not fitting the executor's fetch budget")
  val ExecutorBudgetPeak = new Peak(
    "executor_fetch_peak_bytes",
    "the most bytes the reduce tasks of one executor held at once against its fetch budget " +
      "(fetch.executorBudget): in flight plus fetched and not yet consumed, as the task that " +
      "saw the most found it when it ended")
  val CombineMemoryPeak = new Peak(
    "combine_memory_peak_bytes",
    "the most bytes one executor's local reduction held at once (combine.maxMemory): its map " +
      "tasks' kept records and its combined records and segments in memory, as the map task " +
      "that saw the most found it when it folded")
  val PeakBytesInFlight = new Peak(
    "peak_bytes_in_flight",
    "the most bytes one task had requested and not yet consumed (in flight plus fetched but " +
      "unread)")
  val BufferedByteMs =
    new Time("buffered_byte_ms", "bytes in flight or unread integrated over each task's fetch time")
  val FetchMs = new Time("fetch_ms", "tasks' fetch time")
  val WaitMsBySource =
    new TimePerKey("wait_ms_by_source", "time tasks blocked for each remote executor's blocks")
  val RateBytesBySource = new TimePerKey(
    "rate_bytes_by_source",
    "bytes read from each source times the rate observed from it",
    internal = true)
  val HostBySource = new Label("host_by_source", "the host of each executor blocks came from")
  val LimitMin = new Floor(
    "elastic_limit_min",
    "the smallest in-flight limit any task had (= the max when elastic is off)")
  val LimitMax =
    new Peak("elastic_limit_max", "the largest in-flight limit any task had (the hard limit)")
  val LimitByteMs = new Time(
    "elastic_limit_byte_ms",
    "each task's in-flight limit integrated over its fetch time",
    internal = true)
  val LimitChanges = new Total("elastic_limit_changes", "how often in-flight limits changed")
  val TasksByRemoteSources = new PerKey(
    "tasks_by_remote_sources",
    "how many tasks read blocks from n distinct remote executors, keyed by n (what source " +
      "selection had to choose from; 0 for tasks that read only local blocks)")

  /** Every counter, in declaration order; one declared after it is first read fails. */
  lazy val All: Seq[Counter] = synchronized {
    tableRead = true
    declared
  }

  val DerivedValues: Seq[Derived] = Seq(
    new Derived(
      "blocks_per_request",
      "blocks not local / requests",
      c => {
        val remote = c(BlocksByTransport).iterator.filter(_._1 != Local).map(_._2).sum
        if (c(Requests) == 0) 0.0 else remote.toDouble / c(Requests)
      }),
    new Derived(
      "mean_buffered_bytes",
      "buffered_byte_ms / fetch_ms: the time-averaged buffer",
      c => if (c(FetchMs) == 0) 0.0 else c(BufferedByteMs) / c(FetchMs)),
    new Derived(
      "mean_wait_ms_by_source",
      "wait_ms_by_source per block of that source",
      c =>
        c(WaitMsBySource).iterator.map { case (source, ms) =>
          source -> ms / math.max(1L, c(BlocksBySource).getOrElse(source, 1L))
        }.toMap),
    new Derived(
      "observed_rate_by_source",
      "the rate (bytes per second while requests were outstanding) each task's executor had " +
        "observed from the remote executor when the task ended, a mean weighted by the bytes " +
        "the tasks read from it: what the critical fetch order ranks by",
      _.observedRateBySource),
    new Derived(
      "elastic_limit_mean",
      "the in-flight limit averaged over fetch time",
      c => if (c(FetchMs) == 0) 0.0 else c(LimitByteMs) / c(FetchMs)))
}
