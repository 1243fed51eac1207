package org.apache.spark.shuffle.adaptive.config

import java.util.Locale
import java.util.concurrent.TimeUnit

import scala.collection.mutable

import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry, OptionalConfigEntry, TypedConfigBuilder}
import org.apache.spark.network.util.ByteUnit
import org.apache.spark.shuffle.adaptive.config.ValueRule._

/**
 * Every configuration key of the plugin, declared once, with the [[ValueRule]] its values
 * obey and the keyword Python's `configure()` sets it by, and the rules across keys
 * ([[KeyCombinations]]). `conf/configuration.md` and `pyspark_shuffle/conf_keys.json` (what Python
 * validates with) are generated from them (see ConfigurationDocSuite).
 */
private[spark] object AdaptiveShuffleConf {

  val Prefix = "spark.shuffle.adaptive."

  private[this] val rules = mutable.LinkedHashMap.empty[String, ValueRule[_]]
  private[this] val keywords = mutable.LinkedHashMap.empty[String, String]

  /** The rule `entry`'s values obey. */
  def ruleOf(entry: ConfigEntry[_]): ValueRule[_] = rules(entry.key)

  /** The keyword of `pyspark_shuffle.configure()` that sets `entry`. */
  def keywordOf(entry: ConfigEntry[_]): String = keywords(entry.key)

  private implicit final class Ruled[T](builder: TypedConfigBuilder[T]) {

    /**
     * Values are checked by `rule`; Python's configure() sets the key by `keyword`, and
     * `conf_keys.json` carries both to it.
     */
    def obeying(rule: ValueRule[T], keyword: String): TypedConfigBuilder[T] = {
      rules(builder.parent.key) = rule
      keywords(builder.parent.key) = keyword
      builder.checkValue(rule.accepts, s"must be ${rule.allowed}")
    }
  }

  /** The values of fetch.order. */
  object FetchOrder {
    val Adaptive = "adaptive"
    val Naive = "naive"
    val Pairwise = "pairwise"
    val Critical = "critical"
    val All: Seq[String] = Seq(Adaptive, Naive, Pairwise, Critical)
  }

  val FETCH_ORDER: ConfigEntry[String] =
    ConfigBuilder(Prefix + "fetch.order")
      .doc(
        "Which remote executor a reduce task asks next. 'adaptive': the source with the " +
          "lowest score (see fetch.score.*), ties broken by a circular order of executors that " +
          "starts after the task's own, with requests formed at send time to about one in-flight " +
          "increment. 'naive': Spark's order, requests planned up front and sent in random " +
          "order. 'pairwise': step k fetches only from the executor k places before this one in " +
          "the circular order, one source at a time (CSA-style exchange). 'critical': " +
          "bottleneck first, for links of unequal speed: the executor keeps two requests " +
          "outstanding with every source that has bytes for it, asking first the source whose " +
          "remaining bytes take longest at the rate it delivered at (shared by the executor's " +
          "tasks), and fills the rest of the limit as 'adaptive' does. In every order a " +
          "request leaves only if it fits under the task's limit with what it has in flight, " +
          "or when nothing is in flight.")
      .version("0.1.0")
      .stringConf
      .transform(_.toLowerCase(Locale.ROOT))
      .obeying(Choice(FetchOrder.All), keyword = "order")
      .createWithDefault(FetchOrder.Adaptive)

  val FETCH_IN_FLIGHT_INCREMENT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.inFlightIncrement")
      .doc(
        "The in-flight increment: the size one remote request aggregates blocks up to (a " +
          "block is never split, so a larger block travels alone), and the step by which the " +
          "elastic limit shrinks and grows: a task that consumes slower than blocks arrive " +
          "holds about one increment. Unset means 1 MiB (at most the hard limit), not Spark's " +
          "request size (spark.reducer.maxSizeInFlight / 5), which such a task would hold " +
          "instead; at most the executor's fetch budget / its task slots " +
          "(fetch.executorBudget). Must not exceed the hard limit.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(1, Int.MaxValue), keyword = "in_flight_increment")
      .createOptional

  val FETCH_MAX_IN_FLIGHT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.maxInFlight")
      .doc(
        "The hard in-flight limit of one reduce task: bytes requested and not yet consumed. " +
          "The elastic limit moves between the in-flight increment and this. Unset means " +
          "spark.reducer.maxSizeInFlight.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(1, Long.MaxValue), keyword = "max_in_flight")
      .createOptional

  val FETCH_EXECUTOR_BUDGET: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.executorBudget")
      .doc(
        "The bytes all reduce tasks of one executor may have in flight plus received and not " +
          "yet consumed, however many task slots it has (Spark's limit, " +
          "spark.reducer.maxSizeInFlight, is per task: 16 slots may hold 16 times it in " +
          "direct memory). Each task may hold one in-flight increment whatever the others hold; " +
          "beyond it tasks share the rest, each within its own (elastic) limit; a block that " +
          "does not fit goes to disk, as Spark's blocks above " +
          "spark.network.maxRemoteBlockSizeFetchToMem do. The budget keeps one increment per " +
          "task slot (spark.executor.cores / spark.task.cpus): where it is smaller than that, " +
          "the in-flight increment shrinks to budget / slots. Unset means what Spark allows " +
          "one task: the hard in-flight limit (fetch.maxInFlight). Exceeded only while a task " +
          "reads several shuffles at once (a join), by at most one increment per extra shuffle.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(1, Long.MaxValue), keyword = "executor_budget")
      .createOptional

  val FETCH_ELASTIC: ConfigEntry[Boolean] =
    ConfigBuilder(Prefix + "fetch.elastic.enabled")
      .doc(
        "Whether each reduce task adapts its in-flight limit to how fast it consumes: it " +
          "starts at one in-flight increment, shrinks by one increment after a wait much " +
          "shorter than its average wait and grows by one increment otherwise, between the " +
          "increment and the hard limit: a task that consumes slower than blocks arrive never " +
          "fills its limit with blocks it will not read for a while. Off: the hard limit " +
          "throughout.")
      .version("0.1.0")
      .booleanConf
      .obeying(Bool, keyword = "elastic")
      .createWithDefault(true)

  val FETCH_ELASTIC_SHRINK_BELOW: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.elastic.shrinkBelow")
      .doc("The elastic limit shrinks after a wait of at most this fraction of the task's " +
        "moving-average wait (a task that never waited shrinks too).")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, 1), keyword = "elastic_shrink_below")
      .createWithDefault(0.5)

  val FETCH_ELASTIC_GROW_ABOVE: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.elastic.growAbove")
      .doc(
        "The elastic limit grows after a wait longer than this fraction of the task's " +
          "moving-average wait. Between shrinkBelow and growAbove it stays; equal values (the " +
          "default) give the paper's rule: shrink when much shorter, grow otherwise.")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, Double.PositiveInfinity), keyword = "elastic_grow_above")
      .createWithDefault(0.5)

  val FETCH_WAIT_WINDOW: ConfigEntry[Int] =
    ConfigBuilder(Prefix + "fetch.waitWindow")
      .doc("How many recent waits the moving averages cover: per remote executor (shared by " +
        "the reduce tasks of an executor) and per task (for the elastic limit).")
      .version("0.1.0")
      .intConf
      .obeying(Whole(1, 100000), keyword = "wait_window")
      .createWithDefault(16)

  val FETCH_SCORE_LOAD_WEIGHT: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.score.loadWeight")
      .doc(
        "Weight of load in the adaptive source score: score = loadWeight * (bytes this " +
          "executor's reduce tasks have in flight to the source / in-flight increment) + " +
          "waitWeight * (moving-average ms tasks waited for the source's blocks). The lowest " +
          "score is asked next.")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, Double.PositiveInfinity), keyword = "score_load_weight")
      .createWithDefault(1.0)

  val FETCH_SCORE_WAIT_WEIGHT: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.score.waitWeight")
      .doc(
        "Weight of responsiveness in the adaptive source score, per millisecond of " +
          "moving-average wait (see fetch.score.loadWeight). The default makes 10 ms of average " +
          "wait count as much as one more increment in flight.")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, Double.PositiveInfinity), keyword = "score_wait_weight")
      .createWithDefault(0.1)

  /** The values of transport. */
  object Transport {
    val Auto = "auto"
    val Ucx = "ucx"
    val Netty = "netty"
    val All: Seq[String] = Seq(Auto, Ucx, Netty)
  }

  val TRANSPORT: ConfigEntry[String] =
    ConfigBuilder(Prefix + "transport")
      .doc(
        "How reduce tasks read the blocks of other executors. 'netty': Spark's block " +
          "transfer service (and host-local files where Spark reads them). 'ucx': one-sided " +
          "reads (RDMA GETs) of the serving executor's memory-mapped map outputs through UCX " +
          "(RDMA on InfiniBand/RoCE, shared memory between executors of one host, TCP " +
          "otherwise); a peer without UCX, or a map output UCX cannot serve, is read through " +
          "netty; a task fails with a clear error where the UCX libraries do not load. 'auto': " +
          "'ucx' where the UCX libraries load and a UCX context with a usable transport is " +
          "created and spark.authenticate is off, else 'netty', logged once per executor with " +
          "the reason. UCX_* variables set through spark.executorEnv tune UCX itself.")
      .version("0.1.0")
      .stringConf
      .transform(_.toLowerCase(Locale.ROOT))
      .obeying(Choice(Transport.All), keyword = "transport")
      .createWithDefault(Transport.Netty)

  val UCX_LIBRARY_PATH: ConfigEntry[String] =
    ConfigBuilder(Prefix + "ucx.libraryPath")
      .doc(
        "The directory holding UCX 1.18's libucp.so.0, libuct.so.0, libucs.so.0 and " +
          "libucm.so.0 (and its transport modules under ucx/), loaded by absolute path before " +
          "the Java binding. pyspark_shuffle.configure() sets it to the libraries of the " +
          "libucx-cu11 wheel (pip install 'pyspark-shuffle[ucx]'); empty: the system's loader " +
          "path.")
      .version("0.1.0")
      .stringConf
      .obeying(Directory, keyword = "ucx_library_path")
      .createWithDefault("")

  val UCX_TIMEOUT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "ucx.timeout")
      .doc("How long a one-sided read may take before its fetch fails (a FetchFailedException, " +
        "so Spark reruns the map stage). Unset means spark.network.timeout.")
      .version("0.1.0")
      .timeConf(TimeUnit.MILLISECONDS)
      .obeying(Duration, keyword = "ucx_timeout")
      .createOptional

  /** The values of mode. */
  object Mode {
    val Pull = "pull"
    val Push = "push"
    val Auto = "auto"
    val All: Seq[String] = Seq(Pull, Push, Auto)
  }

  val MODE: ConfigEntry[String] =
    ConfigBuilder(Prefix + "mode")
      .doc(
        "Where map outputs are served from. 'pull': Spark's map-output files, read by the " +
          "reduce tasks. 'push' (shuffle-on-write): in the background while later map tasks " +
          "run, each map output's small blocks are sent to their reduce partition's owner, which " +
          "appends them to the partition's merged chunks (push.chunkSize) in its store " +
          "(store.maxSize; a full owner hands chunks to peers with room, push.spillToPeers, then " +
          "moves them to its local disk); owners hold contiguous ranges of partitions, equal " +
          "ranges over the executors known when the map stage is submitted. A reduce task reads " +
          "each partition's chunks in few large requests and the blocks that were not merged (a " +
          "full store or push queue, a lost owner) from their files, which stay the source of " +
          "truth. 'auto': each shuffle is pushed or pulled as the reduce stages before it showed " +
          "(push.autoWaitShare): pushed once a reduce stage of a pulled shuffle waited for " +
          "blocks long enough that the links, not the tasks, bound it; pulled until then, at " +
          "no cost. 'push' and 'auto' need spark.shuffle.service.enabled=false. (The former 'store' mode, " +
          "map outputs kept in their own executors' stores, is retired: push spills to peers' " +
          "memory and reads few large chunks instead of every block.)")
      .version("0.1.0")
      .stringConf
      .transform(_.toLowerCase(Locale.ROOT))
      .obeying(Choice(Mode.All), keyword = "mode")
      .createWithDefault(Mode.Pull)

  /** Of spark.executor.memory, when store.maxSize is unset. */
  val DefaultStoreFraction = 0.1

  val STORE_MAX_SIZE: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "store.maxSize")
      .doc(
        "The most bytes of merged chunks one executor's store holds (mode=push), its own and " +
          "those other owners handed to it. The store keeps them in direct (off-heap) memory, " +
          "outside the heap and outside Spark's unified memory: raise " +
          "spark.executor.memoryOverhead by as much. Unset means 10% of spark.executor.memory. " +
          "Chunks leave the store when their shuffle is unregistered; those that do not fit go " +
          "to peers with room (push.spillToPeers), then to a merged file on local disk.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(0, Long.MaxValue), keyword = "store_max_size")
      .createOptional

  val PUSH_AUTO_WAIT_SHARE: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "push.autoWaitShare")
      .doc(
        "mode=auto: a new shuffle is pushed once the newest reduce stage that read a pulled " +
          "shuffle (of 32 MiB or more from other executors) waited for blocks at least this " +
          "share of its tasks' time, and pulled once such a stage waited less. Pushing crosses " +
          "the links while the map tasks compute, so it pays where the reduce tasks would " +
          "otherwise wait for them; where they do not wait, CPU bounds the job and pushing " +
          "would only add work. Before any such stage, shuffles are pulled.")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, 1), keyword = "push_auto_wait_share")
      .createWithDefault(0.2)

  val PUSH_QUEUE_SIZE: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "push.queueSize")
      .doc("mode=push: the most bytes of committed map outputs one executor holds waiting to " +
        "be pushed (they wait in their files, not in memory). A map task only queues its " +
        "output and returns; a map output that would exceed this stays in its file and is " +
        "read from it as in mode=pull. It bounds how far pushing may fall behind the map tasks. " +
        "Unset means store.maxSize.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(0, Long.MaxValue), keyword = "push_queue_size")
      .createOptional

  val PUSH_NICENESS: ConfigEntry[Int] =
    ConfigBuilder(Prefix + "push.niceness")
      .doc(
        "mode=push: how much lower than the task threads' the CPU priority of the threads " +
          "that push, merge what peers pushed and hand chunks off to peers is (added to their " +
          "Linux nice values): they work with the CPU the map tasks leave idle, and when the " +
          "tasks need every core they fall behind, the push queue fills (push.queueSize) and " +
          "what is not pushed is read from the map output files, as in mode=pull. 0 keeps them " +
          "at the tasks' priority. Not applied under push.reliability=replicated, whose map " +
          "tasks wait for their pushes.")
      .version("0.1.0")
      .intConf
      .obeying(Whole(0, 19), keyword = "push_niceness")
      .createWithDefault(10)

  val PUSH_CHUNK_SIZE: ConfigEntry[Long] =
    ConfigBuilder(Prefix + "push.chunkSize")
      .doc(
        "mode=push: the size of the chunks an owner merges a reduce partition's pushed blocks " +
          "into and of the runs a pusher sends. A reduce task reads the chunks an owner holds " +
          "of neighbouring small partitions (AQE's coalesced reads), and runs of a large " +
          "partition's consecutive chunks, in requests of up to Spark's request size " +
          "(spark.reducer.maxSizeInFlight / 5), the fetch in-flight increment or this size, " +
          "whichever is largest. A chunk is fetched whole, so it should stay well below " +
          "spark.reducer.maxSizeInFlight. A block larger than a chunk is a chunk of its own.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(1, Long.MaxValue), keyword = "push_chunk_size")
      .createWithDefaultString("4m")

  val PUSH_SPILL_TO_PEERS: ConfigEntry[Boolean] =
    ConfigBuilder(Prefix + "push.spillToPeers")
      .doc(
        "mode=push: an owner whose store is more than three quarters full hands the chunks of " +
          "its hottest partitions off to the executor with the most free store memory among " +
          "those it asks (remote-memory spill, DSA w/ SMS), until it is half full or no peer " +
          "has room; an executor takes other owners' chunks only while its store is at most " +
          "half full. Reduce tasks read a handed-off chunk where it went. What neither memory " +
          "takes moves to the owner's disk. false: straight to disk. Off under " +
          "push.reliability=replicated: a chunk at a peer would be lost with the peer, and with " +
          "it the blocks of the peer's own map outputs it holds.")
      .version("0.1.0")
      .booleanConf
      .obeying(Bool, keyword = "push_spill_to_peers")
      .createWithDefault(true)

  val PUSH_PLACE_BY_SIZE_AFTER: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "push.placeBySizeAfter")
      .doc(
        "mode=push: a map stage starts with equal ranges of partitions per owner, since no " +
          "size is known yet. Once this fraction of its map tasks succeeded, the driver places " +
          "the owners again by the partition sizes those map outputs reported (balanced " +
          "placement, iShuffle), if that lowers the most bytes one owner merges by a tenth or " +
          "more or gives a partition larger than an even share an owner of its own, and sends " +
          "the new table to the executors' pushers; no task waits for it. " +
          "Reduce tasks read a partition's chunks from its owner in every table. Executors " +
          "that start running tasks before the map stage ends join the owners the same way. 0 " +
          "keeps the equal ranges, and the owners known when the map stage was submitted.")
      .version("0.1.0")
      .doubleConf
      .obeying(Number(0, 1), keyword = "push_place_by_size_after")
      .createWithDefault(0.1)

  /** The values of push.reliability. */
  object Reliability {
    val None = "none"
    val Replicated = "replicated"
    val All: Seq[String] = Seq(None, Replicated)
  }

  /** The ShuffleDataIO that tells Spark a shuffle outlives its map executors (replicated). */
  val ReliableDataIO = "org.apache.spark.shuffle.adaptive.AdaptiveShuffleDataIO"

  val PUSH_RELIABILITY: ConfigEntry[String] =
    ConfigBuilder(Prefix + "push.reliability")
      .doc("mode=push: 'none' keeps one copy of what was not pushed, in its map output's file: " +
        "a lost executor's map outputs are computed again, as with Spark's sort shuffle. " +
        "'replicated' makes the pushed copy count as the map output: every non-empty block is " +
        "pushed (push.maxBlockSize does not apply), the blocks an executor would merge itself " +
        "go to the next owner in the table instead, and a map task returns once its blocks " +
        "were pushed (or spark.rpc.askTimeout passed), so a map output is held by another " +
        "executor when the map stage ends; a full store moves chunks to its own disk, not to " +
        "peers (push.spillToPeers does not apply). Spark is told the shuffle's storage is reliable " +
        "(needs spark.shuffle.sort.io.plugin.class=" + ReliableDataIO + ", which " +
        "pyspark_shuffle.configure sets), so it keeps a lost executor's map outputs; reduce " +
        "tasks read its blocks from the merged chunks, and the driver marks for a rerun only " +
        "the lost executor's map outputs that some block of was not merged elsewhere. " +
        "Dynamic allocation then runs without the external shuffle service.")
      .version("0.1.0")
      .stringConf
      .transform(_.toLowerCase(Locale.ROOT))
      .obeying(Choice(Reliability.All), keyword = "push_reliability")
      .createWithDefault(Reliability.None)

  /** The session extension of the plugin's SQL rules, named where a key needs it. */
  val SqlExtensions = "org.apache.spark.shuffle.adaptive.sql.AdaptiveShuffleExtensions"

  /** push.maxBlockSize when unset, by where a shuffle's reduce tasks run. */
  object PushMaxBlockSize {

    /**
     * At their owners (the plugin's Spark SQL exchange): a pushed block crosses the network once,
     * as in sort's shuffle, so pushing every block of up to Spark's push-based shuffle's limit
     * pays on fast and slow links alike (measured in docs/measurements.md).
     */
    val AtOwners: Long = 1024L * 1024

    /**
     * Anywhere (RDD shuffles): a pushed block may cross again to its reduce task, so only the
     * blocks whose per-request cost outweighs a second crossing are pushed.
     */
    val Anywhere: Long = 4 * 1024L
  }

  val PUSH_MAX_BLOCK_SIZE: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "push.maxBlockSize")
      .doc(
        "mode=push: blocks larger than this are not pushed; reduce tasks read them from their " +
          "map outputs. Merging pays for small blocks, whose reads cost more per request than " +
          "per byte; pushing a large block costs a copy over the network and into the owner's " +
          "store and saves little, as it is already one large read. Unset means 1m for the " +
          "exchanges of Spark SQL under spark.sql.extensions=" + SqlExtensions + " (set by " +
          "pyspark_shuffle.configure), whose " +
          "reduce tasks run at their partitions' owners, and 4k for other shuffles (RDD " +
          "shuffles): there a pushed block crosses the network to its owner and, unless the " +
          "reduce task runs there, again to the reduce task, so raise it for them only where " +
          "disk seeks, not the network, bound the shuffle. Both defaults are the break-even " +
          "measured where every node shares two cores.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(1, Long.MaxValue), keyword = "push_max_block_size")
      .createOptional

  val COMBINE_ENABLED: ConfigEntry[Boolean] =
    ConfigBuilder(Prefix + "combine.enabled")
      .doc(
        "Local reduction (Twister): the map outputs of a shuffle whose records combine (a Spark " +
          "SQL partial aggregate's exchange, which needs spark.sql.extensions=" + SqlExtensions +
          ", set by pyspark_shuffle.configure; an RDD shuffle with map-side combine: reduceByKey, " +
          "aggregateByKey, combineByKey) are folded, as their map tasks commit, into one record " +
          "per key and reduce partition on their executor, with the aggregate's own merge, " +
          "instead of being written to their files: a record folded into a key held is neither " +
          "written nor read, and a map output's file holds only what did not fit in combine " +
          "memory. A reduce task reads, per executor, its partitions' combined records in one " +
          "request besides the files. An executor's first map tasks judge whether folding pays, " +
          "writing their files whole with a sample of their keys: it folds where enough of a map " +
          "output's keys were in the map outputs before it, stops where folds stop meeting keys " +
          "held, and judges again now and then. Combined records are the only copy of what was " +
          "folded: a lost executor's map tasks run again, as under the sort shuffle without the " +
          "external shuffle service. PySpark RDD shuffles combine in Python and are not combined " +
          "here. Joins, repartitions and sorts are never combined, nor any shuffle with " +
          "spark.shuffle.service.enabled, spark.storage.decommission.shuffleBlocks.enabled or " +
          "spark.shuffle.useOldFetchProtocol (each needs whole files), or under " +
          "push.reliability=replicated (which pushes every shuffle).")
      .version("0.1.0")
      .booleanConf
      .obeying(Bool, keyword = "combine")
      .createWithDefault(true)

  val COMBINE_MAX_MEMORY: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "combine.maxMemory")
      .doc(
        "The most bytes one executor's local reduction holds on the JVM heap (outside Spark's " +
          "unified memory): the records its running map tasks keep to fold (a task keeps at most " +
          "three quarters of it, and writes what does not fit to its map output's file) and the " +
          "combined records. When a fold finds no room, every partition's combined records are " +
          "sealed into compressed segments and combining starts again (a partition still without " +
          "room becomes a segment of that map output alone); segments go to local disk when they " +
          "take more than half of it. Unset means 10% of spark.executor.memory.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .obeying(Size(0, Long.MaxValue), keyword = "combine_max_memory")
      .createOptional

  val PROFILE_DIR: ConfigEntry[String] =
    ConfigBuilder(Prefix + "profile.dir")
      .doc(
        "Where the driver writes the CPU profiles of each executor, stage by stage, when " +
          "spark.plugins holds org.apache.spark.shuffle.adaptive.metrics.StageProfiler (with " +
          "async-profiler's jar, tools.profiler:async-profiler, on the class path; " +
          "pyspark_shuffle.configure(profile_dir=...) sets both): a directory per application " +
          "with each segment's stacks in async-profiler's collapsed format and segments.jsonl " +
          "saying which stages ran in each. Works under any shuffle manager. Empty: " +
          "pyspark-shuffle-profiles in the driver's working directory.")
      .version("0.1.0")
      .stringConf
      .obeying(Directory, keyword = "profile_dir")
      .createWithDefault("")

  val PROFILE_INTERVAL: ConfigEntry[Long] =
    ConfigBuilder(Prefix + "profile.interval")
      .doc("How much CPU time a thread spends between two samples of its stack, under " +
        "org.apache.spark.shuffle.adaptive.metrics.StageProfiler (see profile.dir).")
      .version("0.1.0")
      .timeConf(TimeUnit.MILLISECONDS)
      .obeying(Duration, keyword = "profile_interval")
      .createWithDefaultString("10ms")

  /** In the order the documentation lists them. */
  val entries: Seq[ConfigEntry[_]] = Seq(
    FETCH_ORDER,
    FETCH_IN_FLIGHT_INCREMENT,
    FETCH_MAX_IN_FLIGHT,
    FETCH_EXECUTOR_BUDGET,
    FETCH_ELASTIC,
    FETCH_ELASTIC_SHRINK_BELOW,
    FETCH_ELASTIC_GROW_ABOVE,
    FETCH_WAIT_WINDOW,
    FETCH_SCORE_LOAD_WEIGHT,
    FETCH_SCORE_WAIT_WEIGHT,
    TRANSPORT,
    UCX_LIBRARY_PATH,
    UCX_TIMEOUT,
    MODE,
    STORE_MAX_SIZE,
    PUSH_QUEUE_SIZE,
    PUSH_NICENESS,
    PUSH_CHUNK_SIZE,
    PUSH_MAX_BLOCK_SIZE,
    PUSH_SPILL_TO_PEERS,
    PUSH_PLACE_BY_SIZE_AFTER,
    PUSH_AUTO_WAIT_SHARE,
    PUSH_RELIABILITY,
    COMBINE_ENABLED,
    COMBINE_MAX_MEMORY,
    PROFILE_DIR,
    PROFILE_INTERVAL)
}
