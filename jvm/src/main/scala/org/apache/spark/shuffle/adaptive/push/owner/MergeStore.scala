package org.apache.spark.shuffle.adaptive.push.owner

import java.io.File
import java.util.concurrent.{ConcurrentHashMap, Executor}

import org.apache.spark.network.util.TransportConf
import org.apache.spark.shuffle.adaptive.memory.{MemoryBound, SpillFile}
import org.apache.spark.shuffle.adaptive.transport.RemoteMemory

/**
 * One executor's merged reduce partitions (mode=push), in at most `memory.capacity` bytes of
 * direct memory, by job:
 *  - [[MergeIntake]]: runs of map outputs come in and are merged into chunks (on `merging`
 *    where it is given);
 *  - [[MemoryPolicy]]: what leaves memory (released once read, to disk), and when;
 *  - [[PeerHandOffs]]: chunks handed to peers with room, and those held for them;
 *  - [[ChunkServing]]: the driver's summaries, reduce tasks' layouts (which seal partitions)
 *    and chunks;
 *  - here, the lifecycle: what reduce tasks sealed goes once a stage that read it completed,
 *    everything of a shuffle when it is removed, and runs of it that arrive later are dropped
 *    ([[StoreShuffles]]).
 *
 * Each part states its locks; every part reads or changes a shuffle's merges under that
 * shuffle's monitor only. `onChange` hears of every change in what is held. Thread-safe.
 */
private[spark] final class MergeStore(
    val memory: MemoryBound,
    chunkSize: Long,
    disk: MergeStore.Disk,
    remote: () => Option[RemoteMemory],
    onChange: MergeStore => Unit,
    merging: Option[Executor] = None) {

  private[this] val shuffles = new StoreShuffles(disk.sslChunkSize)
  private[this] def changed(): Unit = onChange(this)

  val policy = new MemoryPolicy(memory, chunkSize, disk, shuffles)
  val intake = new MergeIntake(policy, shuffles, chunkSize, merging, () => changed())
  val handOffs = new PeerHandOffs(policy, shuffles, () => changed())
  val serving = new ChunkServing(intake, shuffles, remote)

  /**
   * Bytes of direct memory its chunks hold: `memory.used` (less the runs reserved on their way
   * in), and the chunks that left memory while an answer was still serving them.
   */
  def directBytes: Long = shuffles.direct.get

  def removeShuffle(shuffleId: Int): Unit =
    shuffles.remove(shuffleId).foreach { s =>
      memory.release(s.synchronized(s.drop()))
      disk.remove(shuffleId)
      changed()
    }

  /**
   * A stage that read `shuffleId` completed: its sealed partitions' chunks leave memory
   * ([[MemoryPolicy.readBy]]). Answers the bytes freed.
   */
  def stageRead(shuffleId: Int): Long = {
    val freed = policy.readBy(shuffleId)
    if (freed > 0) changed()
    freed
  }

  def clear(): Unit = shuffles.ids.foreach(removeShuffle)
}

private[spark] object MergeStore {

  /**
   * Where an executor's merged chunks go when memory is short: one [[SpillFile]] per shuffle,
   * made by `newFile` when a shuffle's first chunk moves there.
   */
  final class Disk(newFile: () => File, transport: TransportConf) {
    private[this] val files = new ConcurrentHashMap[Int, SpillFile]

    /** The pieces an answer that has segments of these files in it is sent in under TLS. */
    def sslChunkSize: Int = transport.sslShuffleChunkSize()

    def file(shuffleId: Int): SpillFile =
      files.computeIfAbsent(shuffleId, _ => new SpillFile(newFile(), transport))

    def remove(shuffleId: Int): Unit = Option(files.remove(shuffleId)).foreach(_.delete())
  }
}
