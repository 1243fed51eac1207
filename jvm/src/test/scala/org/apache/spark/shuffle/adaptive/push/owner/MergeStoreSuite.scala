package org.apache.spark.shuffle.adaptive.push.owner

import java.io.{ByteArrayOutputStream, File}
import java.lang.management.{BufferPoolMXBean, ManagementFactory}
import java.nio.ByteBuffer
import java.nio.channels.Channels
import java.nio.file.Files

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import io.netty.channel.FileRegion
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.push.protocol.{ChunkRequest, HandOffUpload, HostedChunkRequest, MergedChunk, PushPayloads, PushedRun, RunUpload}
import org.apache.spark.shuffle.adaptive.push.map.Pusher
import org.apache.spark.shuffle.adaptive.transport.{BlockUploads, ExposedBuffer, RemoteMemory, RemoteRegion}

class MergeStoreSuite extends AnyFunSuite {
  import MergeStoreSuite._

  private def store(
      capacity: Long,
      chunkSize: Long,
      disk: MergeStore.Disk = noDisk,
      remote: Option[RemoteMemory] = None): (MergeStore, MemoryBound) = {
    val memory = new MemoryBound(capacity)
    (new MergeStore(memory, chunkSize, disk, () => remote, _ => ()), memory)
  }

  /** A run of map `mapId`'s blocks for partitions from 0, streamed here by another executor. */
  private def receive(s: MergeStore, mapId: Long, sizes: Long*): Unit =
    receiveOf(s, 0, mapId, sizes: _*)

  /** What `append` is given: reserved bytes, of which it keeps some and the rest go back. */
  private def push(s: MergeStore, m: MemoryBound, mapId: Long, first: Int, sizes: Long*): Long = {
    assert(m.reserve(sizes.sum))
    val kept = s.intake.append(0, mapId, first, sizes.toArray, blocksOf(mapId, sizes: _*))
    m.release(sizes.sum - kept)
    kept
  }

  /** The JVM's count of direct buffers and of their bytes. */
  private val direct = ManagementFactory
    .getPlatformMXBeans(classOf[BufferPoolMXBean])
    .asScala
    .find(_.getName == "direct")
    .get

  private def bytesOf(s: MergeStore, c: MergedChunk): Array[Byte] = {
    val served = s.serving.chunk(0, c.chunkId).get
    try contentOf(served).toArray
    finally served.release()
  }

  private def contentOf(served: ManagedBuffer): Seq[Byte] = {
    val buf = served.nioByteBuffer()
    val out = new Array[Byte](buf.remaining)
    buf.get(out)
    out.toSeq
  }

  test("blocks are appended to their partition's chunks, a new chunk past the chunk size") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 60, 10)
    push(s, m, 2, 0, 30, 0)
    push(s, m, 3, 0, 50, 20)
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    assert(layout.map(c => (c.partition, c.mapIds.toSeq, c.lengths.toSeq)) ===
      Seq((0, Seq(1L, 2L), Seq(60L, 30L)), (0, Seq(3L), Seq(50L)), (1, Seq(1L, 3L), Seq(10L, 20L))))
    assert(bytesOf(s, layout.head).toSeq === (Seq.fill(60)(16.toByte) ++ Seq.fill(30)(32.toByte)))
    // Memory is what the chunks' buffers hold: partition 0's first doubled from 60 bytes to the
    // chunk size, its second holds 50, partition 1's took 10, then 30.
    assert(m.used === 100 + 50 + 30)
  }

  test("a block kept out of a run is a copy of its own: the run's direct memory is freed at once") {
    val (s, m) = store(64L << 20, chunkSize = 16L << 20)
    // Partitions 1 to 63 sealed: of a run of 64 blocks of 128 KiB (8 MiB), one block is kept.
    s.serving.layout(0, 1, 64, forPeer = false)
    val block = 128 * 1024
    val before = direct.getMemoryUsed
    assert(push(s, m, 1, 0, Seq.fill(64)(block.toLong): _*) === block)
    val grown = direct.getMemoryUsed - before
    assert(grown < (1L << 20), s"direct memory grew by $grown bytes to keep one $block-byte block")
    assert(
      bytesOf(s, s.serving.layout(0, 0, 1, forPeer = false).head).toSeq === Seq.fill(block)(
        16.toByte))
  }

  test("a chunk's blocks are copied into one buffer that doubles: no buffer per block") {
    val (s, m) = store(1 << 20, chunkSize = 1 << 20)
    val buffers = direct.getCount
    (1 to 1024).foreach(mapId => push(s, m, mapId, 0, 64))
    // Each run's own buffer is freed as it is merged; the chunk allocated 64, 128, ... 64 KiB.
    val grown = direct.getCount - buffers
    assert(grown < 100, s"$grown direct buffers to hold 1024 blocks of 64 bytes")
    assert(m.used === 64 * 1024, "the chunk's buffer is exactly full")
    val layout = s.serving.layout(0, 0, 1, forPeer = false)
    assert(layout.map(_.lengths.length) === Seq(1024))
    assert(
      bytesOf(s, layout.head).toSeq === (1 to 1024).flatMap(id => Seq.fill(64)((id * 16).toByte)))
  }

  test("a chunk is described alike to every layout request, however many blocks it holds") {
    val (s, m) = store(1 << 20, chunkSize = 1 << 20)
    (1 to 16).foreach(mapId => push(s, m, mapId, 0, 3))
    val first = s.serving.layout(0, 0, 1, forPeer = true)
    assert(first.head.mapIds.toSeq === (1L to 16L))
    assert(s.serving.layout(0, 0, 1, forPeer = true).head.mapIds.toSeq === (1L to 16L))
    assert(s.serving.layout(0, 0, 1, forPeer = true).head.lengths.toSeq === Seq.fill(16)(3L))
  }

  test("a map output already merged is not appended again (a retried or speculative task)") {
    val (s, m) = store(1000, chunkSize = 100)
    assert(push(s, m, 1, 0, 10, 10) === 20)
    assert(push(s, m, 1, 0, 10, 10) === 0)
    assert(push(s, m, 1, 1, 10) === 0)
    assert(s.serving.layout(0, 0, 2, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L), Seq(1L)))
    assert(m.used === 20)
  }

  test("a layout seals its partitions: later blocks of them stay in their files") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 10, 10)
    assert(s.serving.layout(0, 0, 1, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L)))
    assert(push(s, m, 2, 0, 10, 10) === 10, "partition 1 was not sealed")
    assert(
      s.serving.layout(0, 0, 1, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L)),
      "the same layout again")
    assert(s.serving.layout(0, 1, 2, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L, 2L)))
  }

  test("runs streamed by other executors are held if they fit, else dropped; removal frees all") {
    val (s, m) = store(100, chunkSize = 1 << 20)
    receive(s, 1, 40, 20)
    // Failing the stream would close the connection other pushes share.
    receive(s, 2, 30, 20)
    assert(
      m.used === 60 && s.serving.layout(0, 0, 2, forPeer = true).map(_.mapIds.toSeq) === Seq(
        Seq(1L),
        Seq(1L)))
    s.removeShuffle(0)
    assert(
      m.used === 0 && s.serving.layout(0, 0, 2, forPeer = true).isEmpty && s.serving
        .chunk(0, 0)
        .isEmpty)
    assert(push(s, m, 3, 0, 10) === 0, "nothing of a removed shuffle is merged any more")
  }

  /** A store whose received runs wait in `waiting` until the test merges them. */
  private def mergingLater(capacity: Long): (MergeStore, MemoryBound, mutable.Queue[Runnable]) = {
    val memory = new MemoryBound(capacity)
    val waiting = mutable.Queue.empty[Runnable]
    (
      new MergeStore(memory, 100, noDisk, () => None, _ => (), Some(r => waiting.enqueue(r))),
      memory,
      waiting)
  }

  test("a received run is merged on the merging executor, its bytes reserved until then") {
    val (s, m, waiting) = mergingLater(1000)
    receive(s, 1, 10, 0, 20)
    assert(
      waiting.size === 1 && m.used === 30 && s.serving.chunk(0, 0).isEmpty,
      "received, not merged")
    waiting.dequeue().run()
    assert(Seq(0, 1).map(s.serving.chunk(0, _).map(_.size)) === Seq(Some(10L), Some(20L)))
    assert(m.used === 30, "the run's reservation became its chunks'")
  }

  test("a layout first merges the runs still waiting: a pushed run is not read from its file") {
    val (s, m, waiting) = mergingLater(1000)
    receive(s, 1, 10, 20)
    receive(s, 2, 5)
    assert(
      s.serving.layout(0, 0, 1, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L, 2L)),
      "merged on the layout's thread before it sealed")
    waiting.foreach(_.run())
    assert(s.serving.summary(0).map(p => (p.partition, p.bytes)) === Seq((0, 15L), (1, 20L)))
    assert(m.used === 40, "each run merged once: chunks of 10 doubled to 20, and of 20")
  }

  test("a summary first merges the runs still waiting") {
    val (s, _, _) = mergingLater(1000)
    receive(s, 1, 10, 20)
    assert(s.serving.summary(0).map(p => (p.partition, p.bytes)) === Seq((0, 10L), (1, 20L)))
  }

  test("a run the merging executor no longer takes (stopping) is merged as it arrives") {
    val memory = new MemoryBound(1000)
    val stopping = new MergeStore(
      memory,
      100,
      noDisk,
      () => None,
      _ => (),
      Some(_ => throw new java.util.concurrent.RejectedExecutionException))
    receive(stopping, 1, 10, 20)
    assert(memory.used === 30)
  }

  test("when memory is short, the hot partition's chunks move to disk and are read whole") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val (s, m) = store(100, chunkSize = 30, disk = diskIn(dir))
    receive(s, 1, 30, 5)
    receive(s, 2, 30, 5)
    receive(s, 3, 20)
    assert(m.used === 90 && s.policy.bytesMovedToDisk === 0)
    // 25 more bytes do not fit: partition 0 (80 bytes merged) moves to disk, a chunk at a time,
    // until a chunk's worth is free; partition 1's small chunk stays in memory.
    receive(s, 4, 20, 5)
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    assert(
      layout.map(c => (c.partition, c.mapIds.toSeq)) ===
        Seq((0, Seq(1L)), (0, Seq(2L)), (0, Seq(3L)), (0, Seq(4L)), (1, Seq(1L, 2L, 4L))))
    // Partition 1's chunk doubled its 10 bytes to take 5 more: 20 bytes of memory.
    assert(s.policy.bytesMovedToDisk === 30 && m.used === 90)
    assert(dir.listFiles().length === 1, "one merged file for the shuffle")
    layout.foreach { c =>
      val expected = c.mapIds.toSeq.zip(c.lengths).flatMap { case (mapId, length) =>
        Seq.fill(length.toInt)((mapId * 16 + c.partition).toByte)
      }
      assert(bytesOf(s, c).toSeq === expected, s"chunk ${c.chunkId}")
    }
    s.removeShuffle(0)
    assert(dir.listFiles().isEmpty && m.used === 0)
    dir.delete()
  }

  test("chunks already read are released before any chunk moves to disk, the oldest first") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val (s, m) = store(100, chunkSize = 30, disk = diskIn(dir))
    receiveOf(s, 0, 1, 30, 10)
    receiveOf(s, 1, 1, 30)
    val read = s.serving.layout(0, 0, 2, forPeer = false)
    assert(read.map(_.mapIds.toSeq) === Seq(Seq(1L), Seq(1L)))
    s.serving.layout(1, 0, 1, forPeer = false)
    // 70 bytes in use: 35 more do not fit. A read chunk of shuffle 0 goes, and nothing to disk.
    receiveOf(s, 2, 1, 30, 5)
    assert(s.policy.bytesMovedToDisk === 0 && m.used === 75)
    assert(dir.listFiles().isEmpty)
    assert(s.serving.layout(1, 0, 1, forPeer = false).map(_.mapIds.toSeq) === Seq(Seq(1L)), "kept")
    // Read again, shuffle 0's partition 0 has nothing merged: its blocks come from files.
    assert(s.serving.layout(0, 0, 2, forPeer = false).map(_.partition) === Seq(1))
    assert(
      s.serving.chunk(0, read.head.chunkId).isEmpty,
      "a reader of the older layout reads files")
    assert(s.serving.range(0, 0, 2).isEmpty && s.serving.range(0, 1, 2).get.size === 10)
    s.clear()
    assert(m.used === 0)
    dir.delete()
  }

  test("past the hand-off mark, older shuffles' chunks already read go, to half the memory") {
    val (s, m) = store(1000, chunkSize = 100)
    (1 to 6).foreach(mapId => receiveOf(s, 0, mapId, 100))
    s.serving.layout(0, 0, 1, forPeer = false)
    assert(m.used === 600, "under the mark, nothing is released")
    assert(s.serving.layout(0, 0, 1, forPeer = false).size === 6)
    (1 to 2).foreach(mapId => receiveOf(s, 1, mapId, 100))
    // 300 bytes were wanted; a partition goes whole, as its blocks are then read from files.
    assert(m.used === 200)
    assert(s.serving.layout(0, 0, 1, forPeer = false).isEmpty)
    // Shuffle 1's partition 0 is read meanwhile: its chunks stay while shuffle 1 merges.
    s.serving.layout(1, 0, 1, forPeer = false)
    (3 to 5).foreach(mapId => receiveOf(s, 1, mapId, 0, 100))
    assert(m.used === 500)
    assert(s.serving.layout(0, 0, 1, forPeer = false).isEmpty)
    assert(s.serving.layout(1, 0, 1, forPeer = false).map(_.mapIds.toSeq) === Seq(Seq(1L), Seq(2L)))
  }

  test("a layout for a peer exposes the chunks it seals as one buffer each, kept in memory") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val remote = new RecordingRemoteMemory
    val (s, m) = store(100, chunkSize = 30, disk = diskIn(dir), remote = Some(remote))
    receive(s, 1, 10, 5)
    receive(s, 2, 10, 5)
    assert(
      s.serving.layout(0, 0, 1, forPeer = false).forall(_.region.isEmpty),
      "its own tasks read here")
    assert(remote.exposed.isEmpty)
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    assert(
      layout.map(c => (c.partition, c.region.map(_.length))) === Seq(0 -> Some(20), 1 -> Some(10)))
    // Partition 0's blocks came in two runs: copied into one buffer, in layout order.
    val exposed = remote.exposed.map(b => b.duplicate())
    assert(exposed.forall(_.isDirect) && exposed.map(_.remaining) === Seq(20, 10))
    val bytes = new Array[Byte](20)
    exposed.head.get(bytes)
    assert(bytes.toSeq === Seq.fill(10)(16.toByte) ++ Seq.fill(10)(32.toByte))
    assert(bytesOf(s, layout.head).toSeq === bytes.toSeq)
    assert(
      s.serving.layout(0, 0, 2, forPeer = true).map(_.region) === layout.map(_.region),
      "exposed once")
    // 80 bytes do not fit: the exposed chunks stay in memory, so the run stays in its file.
    receive(s, 3, 0, 0, 80)
    assert(s.policy.bytesMovedToDisk === 0 && m.used === 30)
    assert(bytesOf(s, layout.head).toSeq === bytes.toSeq)
    s.removeShuffle(0)
    assert(remote.closed === 2 && m.used === 0)
    dir.delete()
  }

  test("a range serves the chunks held of sealed partitions back to back, in layout order") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val (s, m) = store(100, chunkSize = 30, disk = diskIn(dir))
    receive(s, 1, 30, 5, 0, 4)
    receive(s, 2, 30, 5, 0, 4)
    receive(s, 3, 20)
    receive(s, 4, 20, 5) // partition 0's first chunk moves to disk
    assert(s.policy.bytesMovedToDisk === 30)
    assert(s.serving.range(0, 0, 4).isEmpty, "not before a layout sealed every partition of it")
    val layout = s.serving.layout(0, 0, 4, forPeer = true)
    val range = s.serving.range(0, 0, 4).get.nioByteBuffer()
    val bytes = new Array[Byte](range.remaining)
    range.get(bytes)
    assert(bytes.toSeq === layout.flatMap(c => bytesOf(s, c).toSeq))
    assert(bytes.length === 100 + 15 + 8)
    // Partition 3 alone: partitions with nothing merged add nothing.
    assert(s.serving.range(0, 2, 4).get.size === 8)
    s.removeShuffle(0)
    assert(s.serving.range(0, 0, 4).isEmpty)
    dir.delete()
  }

  test("a range leaves out the chunks handed off to peers") {
    val (s, _) = hotAndCold()
    s.handOffs.take(100).foreach(c => assert(s.handOffs.handedOff(c, peer)))
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    val held = layout.filter(_.hostedAt.isEmpty)
    assert(held.size === layout.size - 1)
    assert(s.serving.range(0, 0, 2).get.size === held.map(_.bytes).sum)
  }

  /**
   * A store of 100 bytes in chunks of 30: partition 0 merged as four chunks, its first moved to
   * disk in `dir` to make room; partition 1's one chunk, between them by id, in memory.
   */
  private def firstChunkOnDisk(dir: File): MergeStore = {
    val (s, _) = store(100, chunkSize = 30, disk = diskIn(dir))
    receive(s, 1, 30, 5)
    receive(s, 2, 30, 5)
    receive(s, 3, 20)
    receive(s, 4, 20, 5)
    s
  }

  test("a run of a partition's chunks is served back to back, in memory and on disk alike") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val s = firstChunkOnDisk(dir)
    assert(s.serving.chunkRun(0, 0, 0, 100).isEmpty, "not before a layout sealed the partition")
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    val ofZero = layout.filter(_.partition == 0)
    // Partition 1's chunk has an id between partition 0's: a run is of its partition only.
    assert(ofZero.map(_.chunkId) === Seq(0, 2, 3, 4) && s.policy.bytesMovedToDisk === 30)
    def runOf(first: Int, until: Int): Seq[Byte] = {
      val served = s.serving.chunkRun(0, 0, first, until).get
      try contentOf(served)
      finally served.release()
    }
    assert(runOf(0, 5) === ofZero.flatMap(c => bytesOf(s, c).toSeq))
    assert(runOf(2, 4) === ofZero.slice(1, 3).flatMap(c => bytesOf(s, c).toSeq))
    assert(s.serving.chunkRun(0, 0, 5, 9).isEmpty, "no chunk of it there")
    s.removeShuffle(0)
    assert(s.serving.chunkRun(0, 0, 0, 5).isEmpty)
    dir.delete()
  }

  test("a run with chunks on disk is sent from the file, neither mapped nor read into the heap") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val s = firstChunkOnDisk(dir)
    val ofZero = s.serving.layout(0, 0, 2, forPeer = true).filter(_.partition == 0)
    val expected = ofZero.flatMap(c => bytesOf(s, c).toSeq)
    val run = s.serving.chunkRun(0, 0, 0, 5).get
    val region = run.convertToNetty().asInstanceOf[FileRegion]
    val sent = new ByteArrayOutputStream
    val socket = Channels.newChannel(sent)
    while (region.transferred < region.count) region.transferTo(socket, region.transferred)
    assert(sent.toByteArray.toSeq === expected)
    assert(contentOf(run) === expected, "read whole, by a task on this executor")
    region.release()
    run.release()
    // A chunk on disk alone is served alike.
    val onDisk = s.serving.chunk(0, ofZero.head.chunkId).get
    assert(onDisk.convertToNetty().isInstanceOf[FileRegion])
    assert(contentOf(onDisk) === bytesOf(s, ofZero.head).toSeq)
    s.removeShuffle(0)
    dir.delete()
  }

  test("a chunk's memory is freed once it left memory and no answer serves it, not by a GC") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 60, 10)
    val layout = s.serving.layout(0, 0, 2, forPeer = false)
    assert(s.directBytes === 70 && m.used === 70)
    val served = s.serving.chunk(0, layout.head.chunkId).get
    served.retain() // as Spark's transport does for each message that carries it
    assert(s.stageRead(0) === 70 && m.used === 0)
    // The answer serving partition 0's chunk still holds its memory, and its bytes are intact.
    assert(s.directBytes === 60)
    assert(contentOf(served) === Seq.fill(60)(16.toByte))
    val before = direct.getMemoryUsed
    served.release()
    assert(s.directBytes === 60, "one holder of the answer is left")
    served.release()
    assert(s.directBytes === 0)
    assert(direct.getMemoryUsed <= before - 60, "freed at once, with no GC")
  }

  test("a removed shuffle's chunks free their memory, those still served once released") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 60, 10)
    push(s, m, 2, 0, 30, 5)
    val layout = s.serving.layout(0, 0, 2, forPeer = false)
    // Partition 0's chunk doubled to the chunk size, partition 1's to 20 bytes.
    assert(s.directBytes === 120 && m.used === 120)
    val served = s.serving.range(0, 0, 2).get
    s.removeShuffle(0)
    assert(m.used === 0 && s.directBytes === 120)
    assert(contentOf(served).size === layout.map(_.bytes).sum)
    served.release()
    assert(s.directBytes === 0)
  }

  test("a run of chunks leaves out those handed off to peers") {
    val (s, _) = hotAndCold()
    s.handOffs.take(100).foreach(c => assert(s.handOffs.handedOff(c, peer)))
    val held = s.serving.layout(0, 0, 1, forPeer = true).filter(_.hostedAt.isEmpty)
    assert(held.size === 2)
    assert(s.serving.chunkRun(0, 0, 0, 100).get.size === held.map(_.bytes).sum)
  }

  test("once a stage read a shuffle, its sealed partitions' chunks leave memory; the rest stay") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 60, 10, 30)
    push(s, m, 2, 0, 30, 0, 30)
    val read = s.serving.layout(0, 0, 2, forPeer = false)
    assert(m.used === 100 + 10 + 60)
    assert(s.stageRead(0) === 110 && m.used === 60)
    assert(s.policy.bytesReleasedAfterRead === 110)
    // A reader of the older layout reads its blocks from their files.
    assert(s.serving.chunk(0, read.head.chunkId).isEmpty)
    // Partition 2 was not read: it is still merged, and a later layout lists it.
    assert(s.serving.layout(0, 2, 3, forPeer = false).map(_.mapIds.toSeq) === Seq(Seq(1L, 2L)))
    assert(s.stageRead(0) === 60 && m.used === 0)
    assert(s.stageRead(5) === 0, "a shuffle this store never merged")
  }

  test("a run larger than the whole memory stays in its file, and nothing moves to disk") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val (s, m) = store(50, chunkSize = 30, disk = diskIn(dir))
    receive(s, 1, 30)
    receive(s, 2, 60)
    assert(s.serving.layout(0, 0, 1, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L)))
    assert(s.policy.bytesMovedToDisk === 0 && m.used === 30 && dir.listFiles().isEmpty)
    s.removeShuffle(0)
    dir.delete()
  }

  test("this executor's own map output is read from its file once and merged") {
    val (s, m) = store(1000, chunkSize = 100)
    val file = File.createTempFile("merge-store", ".data")
    try {
      val bytes = blocksOf(7, 5, 0, 8)
      val array = new Array[Byte](bytes.remaining)
      bytes.get(array)
      Files.write(file.toPath, array)
      assert(s.intake.appendFromFile(0, 7, 1, 3, file, Array(0L, 5, 5, 13)) === 8)
      assert(
        s.serving.layout(0, 0, 3, forPeer = true).map(c => (c.partition, c.lengths.toSeq)) === Seq(
          (2, Seq(8L))))
      assert(
        bytesOf(s, s.serving.layout(0, 2, 3, forPeer = true).head).toSeq === Seq.fill(8)(
          (7 * 16 + 2).toByte))
      assert(m.used === 8)
    } finally file.delete()
  }

  test("layouts survive their encoding") {
    val peer = BlockManagerId("12", "host-é", 7337)
    val region = RemoteRegion(0x7f0012345678L, Array[Byte](1, 2, 3), 1L << 33)
    val chunks = Seq(
      MergedChunk(3, 7, Array(5L, 9L), Array(100L, 1L << 33), region = Some(region)),
      MergedChunk(4, 8, Array(), Array()),
      MergedChunk(5, 7, Array(6L), Array(10L), hostedAt = Some(peer)))
    val decoded = PushPayloads.decodeLayout(PushPayloads.encodeLayout(chunks))
    def fields(c: MergedChunk) = (
      c.chunkId,
      c.partition,
      c.mapIds.toSeq,
      c.lengths.toSeq,
      c.hostedAt,
      c.region.map(r => (r.address, r.rkey.toSeq, r.length)))
    assert(decoded.map(fields) === chunks.map(fields))
    // A chunk is asked for at its owner, or, handed off, at the peer that holds it.
    assert(
      chunks.map(_.request(2)) === Seq(
        ChunkRequest(2, 7, 3),
        ChunkRequest(2, 8, 4),
        HostedChunkRequest(2, 7, 5)))
  }

  private val peer = BlockManagerId("9", "host-9", 7000)

  test("a summary says per partition what was merged, and seals nothing") {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 7, 0, 60, 0, 10)
    push(s, m, 9, 0, 60, 0, 0)
    val summary = s.serving.summary(0)
    assert(
      summary.map(p => (p.partition, p.bytes, p.chunks, p.mapIds.toArray.toSeq)) ===
        Seq((0, 120L, 2, Seq(7L, 9L)), (2, 10L, 1, Seq(7L))))
    val decoded = PushPayloads.decodeSummary(PushPayloads.encodeSummary(summary))
    assert(
      decoded.map(p => (p.partition, p.bytes, p.chunks, p.mapIds.toArray.toSeq)) ===
        summary.map(p => (p.partition, p.bytes, p.chunks, p.mapIds.toArray.toSeq)))
    assert(push(s, m, 11, 0, 5) === 5, "not sealed")
    assert(summary.head.mapIds.getLongCardinality === 2, "a copy: later merges leave it as it was")
  }

  /** Three chunks of partition 0 (100 bytes each) and one of partition 1 (50 bytes). */
  private def hotAndCold(): (MergeStore, MemoryBound) = {
    val (s, m) = store(1000, chunkSize = 100)
    push(s, m, 1, 0, 100, 50)
    push(s, m, 2, 0, 100)
    push(s, m, 3, 0, 100)
    (s, m)
  }

  test("chunks are handed off hottest partition first, within the room; then read at the peer") {
    val (s, m) = hotAndCold()
    assert(m.used === 350)
    val leaving = s.handOffs.take(220)
    assert(leaving.map(c => (c.partition, c.bytes)) === Seq((0, 100L), (0, 100L)))
    // An upload is a run header, then the chunk's bytes.
    val upload = leaving.head.upload.nioByteBuffer()
    val headerLength = RunUpload.headerLength(1)
    assert(RunUpload.sizesOf(upload.duplicate().limit(headerLength), 1).toSeq === Seq(100L))
    assert(upload.remaining === headerLength + 100 && upload.get(headerLength) === 16.toByte)
    leaving.foreach(c => assert(s.handOffs.handedOff(c, peer)))
    assert(m.used === 150 && s.handOffs.bytesHandedOff === 200)
    val layout = s.serving.layout(0, 0, 2, forPeer = true)
    assert(
      layout.map(c => (c.partition, c.hostedAt)) ===
        Seq((0, Some(peer)), (0, Some(peer)), (0, None), (1, None)))
    assert(s.serving.chunk(0, layout.head.chunkId).isEmpty, "no longer served here")
    assert(bytesOf(s, layout(2)).length === 100)
  }

  test("an open chunk taken for a hand-off is closed: later blocks start a new one") {
    val (s, m) = hotAndCold()
    val taken = s.handOffs.take(1000)
    assert(taken.map(_.partition) === Seq(0, 0, 0, 1))
    taken.foreach(s.handOffs.kept)
    push(s, m, 4, 1, 20)
    assert(s.serving.layout(0, 1, 2, forPeer = true).map(_.mapIds.toSeq) === Seq(Seq(1L), Seq(4L)))
  }

  test("a chunk whose partition a layout sealed while it was on its way stays where it was") {
    val (s, m) = hotAndCold()
    val leaving = s.handOffs.take(100)
    assert(s.handOffs.take(1000).forall(_.chunkId != leaving.head.chunkId), "taken once")
    val sealedLayout = s.serving.layout(0, 0, 1, forPeer = true)
    assert(!s.handOffs.handedOff(leaving.head, peer))
    assert(m.used === 350 && s.handOffs.bytesHandedOff === 0)
    assert(
      s.serving.layout(0, 0, 1, forPeer = true).map(_.hostedAt) === sealedLayout.map(_.hostedAt))
    assert(bytesOf(s, sealedLayout.find(_.chunkId == leaving.head.chunkId).get).length === 100)
    assert(s.handOffs.take(1000).isEmpty, "sealed partitions' chunks stay")
  }

  test("a chunk on its way is closed and never moved to disk; one not taken stays as it was") {
    val dir = Files.createTempDirectory("merge-store").toFile
    val (s, m) = store(100, chunkSize = 40, disk = diskIn(dir))
    receive(s, 1, 30, 10)
    receive(s, 2, 30, 10)
    val leaving = s.handOffs.take(30)
    assert(leaving.map(c => (c.partition, c.bytes)) === Seq((0, 30L)))
    // 40 more bytes do not fit: only the chunk not on its way may move to disk.
    receive(s, 3, 30, 10)
    assert(s.policy.bytesMovedToDisk === 30)
    s.handOffs.kept(leaving.head)
    val layout = s.serving.layout(0, 0, 1, forPeer = true)
    assert(layout.map(_.mapIds.toSeq) === Seq(Seq(1L), Seq(2L), Seq(3L)))
    assert(layout.forall(_.hostedAt.isEmpty) && bytesOf(s, layout.head).length === 30)
    s.removeShuffle(0)
    dir.delete()
  }

  /** Chunk `chunkId` of `partition`, `bytes` long, handed off to `s`; whether it took it. */
  private def handOff(s: MergeStore, partition: Int, chunkId: Int, bytes: Int): Boolean = {
    val stream = s.handOffs.receive(0, partition, chunkId)
    val id = HandOffUpload(0, partition, chunkId).blockId.name
    stream.onData(id, ByteBuffer.wrap(RunUpload.header(Array(bytes.toLong))))
    stream.onData(id, ByteBuffer.wrap(Array.fill(bytes)(chunkId.toByte)))
    // A refusal is an answer (the upload succeeds), never a failed stream: a failed one is
    // logged by Spark's side as an error.
    stream.onComplete(id)
    val answer = stream.getCompletionResponse()
    assert(answer == BlockUploads.Kept || answer == BlockUploads.Refused, answer)
    answer == BlockUploads.Kept
  }

  test("an executor holds other owners' chunks while at most half its memory is in use") {
    val (s, m) = store(1000, chunkSize = 100)
    assert(s.policy.roomForPeers === 500)
    assert(handOff(s, 4, 0, 300))
    assert(
      s.policy.roomForPeers === 200 && m.used === 300 && s.handOffs.bytesHostedForPeers === 300)
    // Refused at its end, by an answer, which leaves the connection open: the owner tries
    // elsewhere.
    assert(!handOff(s, 4, 1, 300))
    assert(m.used === 300)
    val held = s.serving.hostedChunk(0, 4, 0).get.nioByteBuffer()
    assert(held.remaining === 300 && held.get(0) === 0.toByte)
    assert(s.serving.hostedChunk(0, 4, 1).isEmpty && s.serving.hostedChunk(0, 5, 0).isEmpty)
    assert(s.serving.layout(0, 4, 5, forPeer = true).isEmpty, "a hosted chunk is in no layout here")
    // Another owner's chunk of the same partition and id (a table's second version) is refused:
    // the first one's owner names this executor in its layout, so the first stays.
    assert(!handOff(s, 4, 0, 100))
    assert(m.used === 300 && s.handOffs.bytesHostedForPeers === 300)
    assert(s.serving.hostedChunk(0, 4, 0).get.size === 300)
    // Once a stage read the shuffle, what was handed off here goes too.
    assert(s.stageRead(0) === 300 && m.used === 0 && s.serving.hostedChunk(0, 4, 0).isEmpty)
    assert(s.policy.roomForPeers === 500)
  }

  test("a map output's runs go to the owners in turn, the one after the pusher's first") {
    val owners = Seq("0", "1", "2").map(id => BlockManagerId(id, "h", 1))
    val byOwner = owners.zip(Seq(Seq("a0", "a1"), Seq("b0"), Seq("c0", "c1", "c2")))
    assert(
      Pusher.interleaved("1", byOwner).map(_._2) ===
        Seq("c0", "a0", "b0", "c1", "a1", "c2"))
  }

  test("a pusher cuts each owner's range into runs of about a chunk, skipping empty blocks") {
    val offsets = Array[Long](0, 0, 40, 40, 100, 300, 300)
    val any = Long.MaxValue
    assert(Pusher.pieces(offsets, 0, 6, 100, any) === Seq((1, 4), (4, 5)))
    assert(Pusher.pieces(offsets, 0, 4, 60, any) === Seq((1, 2), (3, 4)))
    assert(Pusher.pieces(offsets, 5, 6, 100, any).isEmpty)
  }

  test("blocks larger than the push limit are left out of the runs, splitting them") {
    // Blocks of 10, 50, 0, 20, 200 and 30 bytes.
    val offsets = Array[Long](0, 10, 60, 60, 80, 280, 310)
    assert(Pusher.pieces(offsets, 0, 6, 1000, 40) === Seq((0, 1), (3, 4), (5, 6)))
    assert(Pusher.pieces(offsets, 0, 6, 1000, 50) === Seq((0, 4), (5, 6)))
    assert(Pusher.pieces(offsets, 1, 2, 1000, 40).isEmpty)
  }
}

/** Exposes buffers at made-up addresses and counts the ones released. */
private final class RecordingRemoteMemory extends RemoteMemory {
  val exposed = mutable.ArrayBuffer.empty[ByteBuffer]
  var closed = 0

  override def expose(buffer: ByteBuffer): ExposedBuffer = synchronized {
    exposed += buffer
    val region = RemoteRegion(4096L * exposed.size, Array(exposed.size.toByte), buffer.remaining)
    new ExposedBuffer(region, () => synchronized(closed += 1))
  }
}

object MergeStoreSuite {
  private val transport = SparkTransportConf.fromSparkConf(new SparkConf(false), "shuffle")

  def diskIn(dir: File): MergeStore.Disk =
    new MergeStore.Disk(() => File.createTempFile("merged", ".data", dir), transport)

  /** `sizes` blocks of map `mapId`, each filled with a byte naming it, back to back. */
  def blocksOf(mapId: Long, sizes: Long*): ByteBuffer = {
    val out = ByteBuffer.allocateDirect(sizes.sum.toInt)
    sizes.zipWithIndex.foreach { case (size, r) =>
      (0L until size).foreach(_ => out.put((mapId * 16 + r).toByte))
    }
    out.flip()
  }

  /** A run of map `mapId`'s blocks for partitions from 0, streamed to `s` by another executor. */
  def receiveOf(s: MergeStore, shuffleId: Int, mapId: Long, sizes: Long*): Unit = {
    val pushed = PushedRun(shuffleId, mapId, 0, sizes.size)
    val id = pushed.blockId
    val stream = s.intake.receiveRun(pushed)
    stream.onData(id.name, ByteBuffer.wrap(RunUpload.header(sizes.toArray)))
    stream.onData(id.name, blocksOf(mapId, sizes: _*))
    stream.onComplete(id.name)
  }

  /** For stores whose memory is never short. */
  val noDisk: MergeStore.Disk =
    new MergeStore.Disk(() => throw new IllegalStateException("no disk"), transport)
}
