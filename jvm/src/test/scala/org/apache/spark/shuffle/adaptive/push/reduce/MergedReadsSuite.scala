package org.apache.spark.shuffle.adaptive.push.reduce

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.push.protocol.{ChunkRequest, ChunkRunRequest, HostedChunkRequest, MergedChunk, PushRequest, RangeRequest}
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

class MergedReadsSuite extends AnyFunSuite {

  private val a = BlockManagerId("a", "host-a", 7000)
  private val b = BlockManagerId("b", "host-b", 7000)
  private val owner = BlockManagerId("o", "host-o", 7000)

  /** The map output tracker's view: blocks of maps 1..4 of partition 5, 100 bytes each. */
  private def needed(maps: Long*): Seq[(BlockManagerId, Seq[BlockRef])] =
    maps.groupBy(m => if (m % 2 == 0) a else b).toSeq.sortBy(_._1.executorId).map {
      case (home, ms) => home -> ms.map(m => BlockRef(ShuffleBlockId(0, m, 5), 100L, m.toInt))
    }

  private def chunk(id: Int, mapIds: Long*) =
    MergedChunk(id, 5, mapIds.toArray, Array.fill(mapIds.size)(100L))

  /** Shuffle 0's plan for `needs` out of `layouts`, read through the block server. */
  private def planOf(
      needs: Seq[(BlockManagerId, Seq[BlockRef])],
      layouts: Seq[(BlockManagerId, Seq[MergedChunk])],
      requestBytes: Long = 1000,
      oneSided: Boolean = false,
      lostHomes: Set[String] = Set.empty,
      reader: Option[String] = None): MergedReads =
    MergedReads.plan(
      new FetchCounters,
      0,
      needs,
      layouts,
      requestBytes,
      oneSided,
      lostHomes,
      reader)

  /** The blocks left to read from their map outputs and the chunks read, by executor. */
  private def listed(plan: MergedReads): Map[String, Set[String]] =
    (plan.blocks.flatMap { case (addr, blocks) =>
      blocks.map(addr -> _.blockId)
    } ++ plan.chunks.keys)
      .groupMap(_._1.executorId)(_._2.name)
      .map { case (executor, names) => executor -> names.toSet }

  test("merged blocks are read as their chunk at its owner, the others from their homes") {
    val plan =
      planOf(needed(1, 2, 3, 4), Seq(owner -> Seq(chunk(0, 3, 1, 2))))
    val id = chunk(0, 3, 1, 2).request(0).blockId
    assert(listed(plan) === Map("a" -> Set("shuffle_0_4_5"), "o" -> Set(id.name)))
    val parts = plan.chunks((owner, id)).parts
    assert(
      parts.map(p => (p.block.blockId.name, p.home.executorId, p.offset, p.length)) === Seq(
        ("shuffle_0_3_5", "b", 0L, 100L),
        ("shuffle_0_1_5", "b", 100L, 100L),
        ("shuffle_0_2_5", "a", 200L, 100L)))
    assert(parts.map(_.block.mapIndex) === Seq(3, 1, 2))
    assert(plan.chunksAtPeers === 0)
  }

  test("blocks of attempts Spark did not keep or maps outside the range are skipped") {
    // Map 9 is a lost attempt, map 4 outside this task's map range: 2 of 4 blocks needed.
    val plan =
      planOf(needed(1, 2), Seq(owner -> Seq(chunk(0, 9, 1, 4, 2))))
    val parts = plan.chunks.values.head.parts
    assert(
      parts.map(p => (p.block.blockId.name, p.offset)) ===
        Seq(("shuffle_0_1_5", 100L), ("shuffle_0_2_5", 300L)))
    assert(listed(plan).keySet === Set("o"))
  }

  test("a chunk holding two attempts of a map output reads the one Spark kept") {
    // Maps 1 and 11 are two attempts of one map task: Spark kept 11.
    val plan =
      planOf(needed(11, 2), Seq(owner -> Seq(chunk(0, 1, 11, 2))))
    assert(
      plan.chunks.values.head.parts.map(p => (p.block.blockId.name, p.offset)) ===
        Seq(("shuffle_0_11_5", 100L), ("shuffle_0_2_5", 200L)))
  }

  test("a chunk naming a map output twice is never read: its blocks come from their files") {
    val plan = planOf(needed(1, 2), Seq(owner -> Seq(chunk(0, 1, 2, 1))))
    assert(plan.chunks.isEmpty)
    assert(listed(plan) === Map("a" -> Set("shuffle_0_2_5"), "b" -> Set("shuffle_0_1_5")))
  }

  test("a chunk mostly of blocks the task does not need is not read; its blocks come from files") {
    val plan = planOf(needed(1), Seq(owner -> Seq(chunk(0, 1, 7, 8))))
    assert(plan.chunks.isEmpty && listed(plan) === Map("b" -> Set("shuffle_0_1_5")))
  }

  test("...unless a needed block's map output is lost with its executor: the chunk is its copy") {
    val chunks = Seq(owner -> Seq(chunk(0, 1, 7, 8)))
    val plan =
      planOf(needed(1), chunks, lostHomes = Set("b"))
    assert(listed(plan) === Map("o" -> Set(chunk(0, 1, 7, 8).request(0).blockId.name)))
    assert(plan.chunks.values.head.parts.map(_.block.blockId.name) === Seq("shuffle_0_1_5"))
  }

  test("a chunk held elsewhere of blocks in the reading executor's own files is not read") {
    // A replica's chunk: the blocks of executor b's map outputs, at the owner o.
    val chunks = Seq(owner -> Seq(chunk(0, 1, 3)))
    val onB =
      planOf(needed(1, 3), chunks, reader = Some("b"))
    assert(onB.chunks.isEmpty && listed(onB) === Map("b" -> Set("shuffle_0_1_5", "shuffle_0_3_5")))
    val onA =
      planOf(needed(1, 3), chunks, reader = Some("a"))
    assert(listed(onA) === Map("o" -> Set(chunk(0, 1, 3).request(0).blockId.name)))
    // Held by the reading executor itself: one local read of the chunk.
    val onO =
      planOf(needed(1, 3), chunks, reader = Some("o"))
    assert(onO.chunks.size === 1)
  }

  test("chunks of one holder are each a bundle of the read plan, in the order to ask for them") {
    // Partition 5 merged at the owner as two chunks, too large together for one range.
    val plan = planOf(needed(1, 2), Seq(owner -> Seq(chunk(0, 1), chunk(1, 2))), requestBytes = 100)
    assert(
      plan.bundles.map { case (holder, read) => holder -> read.id } === Seq(
        owner -> chunk(0, 1).request(0).blockId,
        owner -> chunk(1, 2).request(0).blockId))
    assert(
      plan.bundles
        .flatMap(_._2.parts.map(_.block.blockId.name)) === Seq("shuffle_0_1_5", "shuffle_0_2_5"))
  }

  test("a block held by two chunks is read from the first") {
    val plan =
      planOf(needed(1, 3), Seq(owner -> Seq(chunk(0, 1, 3)), a -> Seq(chunk(1, 3))))
    assert(plan.chunks.keySet === Set((owner, chunk(0, 1, 3).request(0).blockId: BlockId)))
    assert(listed(plan) === Map("o" -> Set(chunk(0, 1, 3).request(0).blockId.name)))
  }

  test("a chunk its owner handed off is read at the peer that holds it") {
    val handedOff = chunk(0, 1, 2).copy(hostedAt = Some(a))
    val plan = planOf(needed(1, 2, 3), Seq(owner -> Seq(handedOff)))
    val id = handedOff.request(0).blockId
    assert(PushRequest.unapply(id) === Some(HostedChunkRequest(0, 5, 0)))
    assert(listed(plan) === Map("a" -> Set(id.name), "b" -> Set("shuffle_0_3_5")))
    assert(plan.chunksAtPeers === 1)
  }

  /** Maps 1 and 2 (homes a and b) of partitions 5 to 8, 100 bytes each block. */
  private val coalesced: Seq[(BlockManagerId, Seq[BlockRef])] =
    Seq(a -> 2L, b -> 1L).map { case (home, m) =>
      home -> (5 to 8).map(p => BlockRef(ShuffleBlockId(0, m, p), 100L, m.toInt))
    }

  /** Chunk `id` of `partition`, of maps 1 and 2. */
  private def small(id: Int, partition: Int) =
    MergedChunk(id, partition, Array(1L, 2L), Array(100L, 100L))

  test("the chunks of consecutive partitions read whole come in one request, up to its size") {
    val layout = (5 to 8).map(p => small(p - 5, p))
    val plan =
      planOf(coalesced, Seq(owner -> layout), requestBytes = 600)
    val range = RangeRequest(0, 5, 8).blockId
    val last = layout.last.request(0).blockId
    assert(listed(plan) === Map("o" -> Set(range.name, last.name)))
    assert(
      plan.chunks.toSeq.collect { case ((_, id), read) if id == range => read.size } === Seq(600L))
    // Offsets run on across the chunks, in the layout's order.
    assert(
      plan.chunks((owner, range)).parts.map(p => (p.block.blockId.name, p.offset)) === Seq(
        ("shuffle_0_1_5", 0L),
        ("shuffle_0_2_5", 100L),
        ("shuffle_0_1_6", 200L),
        ("shuffle_0_2_6", 300L),
        ("shuffle_0_1_7", 400L),
        ("shuffle_0_2_7", 500L)))
    assert(plan.chunks((owner, last)).parts.map(_.offset) === Seq(0L, 100L))
    assert(plan.chunksInRanges === 3)
  }

  test("a partition not read whole, or larger than a request, is read a chunk per request") {
    // Partition 6: a second chunk mostly of maps not needed; partition 8: two chunks, 400 bytes.
    val layout = Seq(
      small(0, 5),
      small(1, 6),
      MergedChunk(2, 6, Array(7L, 8L), Array(100L, 100L)),
      small(3, 7),
      small(4, 8),
      small(5, 8).copy(mapIds = Array(3L, 4L)))
    val needs = coalesced.map { case (home, blocks) =>
      val m = if (home == a) 4L else 3L
      home -> (blocks :+ BlockRef(ShuffleBlockId(0, m, 8), 100L, m.toInt))
    }
    val plan = planOf(needs, Seq(owner -> layout), requestBytes = 300)
    assert(listed(plan)("o") === Set(0, 1, 3, 4, 5).map(i => layout(i).request(0).blockId.name))
    assert(
      plan.chunks.keys.forall(k =>
        !PushRequest
          .unapply(k._2)
          .exists(_.isInstanceOf[RangeRequest])) && plan.chunksInRanges == 0)
  }

  test("a large partition's chunks are read in runs of consecutive chunks, each up to a request") {
    // Partition 5 as six chunks of 200 bytes, the owner's ids 0, 2, ..., 10; chunk 6 (the
    // fourth) mostly of maps the task does not read.
    val maps = (1L to 12L)
    val layout = maps
      .grouped(2)
      .zipWithIndex
      .map { case (ms, i) =>
        if (i == 3) MergedChunk(6, 5, Array(50L, ms.head), Array(100L, 100L))
        else MergedChunk(2 * i, 5, ms.toArray, Array(100L, 100L))
      }
      .toSeq
    val needs = maps.filter(_ != 7).groupBy(m => if (m % 2 == 0) a else b).toSeq.map {
      case (home, ms) => home -> ms.map(m => BlockRef(ShuffleBlockId(0, m, 5), 100L, m.toInt))
    }
    val plan = planOf(needs, Seq(owner -> layout), requestBytes = 450)
    val runs = plan.chunks.keys.toSeq.map(_._2).map(id => PushRequest.unapply(id).get)
    // A run ends where the next chunk would pass the request's size or is not read.
    assert(
      runs === Seq(
        ChunkRunRequest(0, 5, 0, 3),
        ChunkRequest(0, 5, 4),
        ChunkRunRequest(0, 5, 8, 11)))
    val first = plan.chunks((owner, ChunkRunRequest(0, 5, 0, 3).blockId))
    assert(first.size === 400)
    assert(
      first.parts.map(p => (p.block.blockId.name, p.offset)) === Seq(
        ("shuffle_0_1_5", 0L),
        ("shuffle_0_2_5", 100L),
        ("shuffle_0_3_5", 200L),
        ("shuffle_0_4_5", 300L)))
    // Map 8's block, in the chunk not read, comes from its map output.
    assert(listed(plan)("a") === Set("shuffle_0_8_5"))
  }

  test("a chunk handed off is read at its peer and leaves the owner's range whole") {
    val layout = Seq(small(0, 5), small(1, 6).copy(hostedAt = Some(a)), small(2, 7))
    val plan =
      planOf(coalesced, Seq(owner -> layout))
    val range = RangeRequest(0, 5, 8).blockId
    assert(listed(plan)("o") === Set(range.name))
    assert(listed(plan)("a") contains layout(1).request(0).blockId.name)
    assert(
      plan.chunks((owner, range)).parts.map(p => (p.block.blockId.name, p.offset)) === Seq(
        ("shuffle_0_1_5", 0L),
        ("shuffle_0_2_5", 100L),
        ("shuffle_0_1_7", 200L),
        ("shuffle_0_2_7", 300L)))
    assert(plan.chunksAtPeers === 1)
  }

  test("a task that reads one-sided reads each exposed chunk alone, with its region") {
    val region = RemoteRegion(4096L, Array[Byte](7), 200L)
    // Partitions 5 and 6 exposed; 7 and 8 not (say, on disk at the owner).
    val layout = (5 to 8).map(p => small(p - 5, p).copy(region = Some(region).filter(_ => p < 7)))
    val oneSided =
      planOf(coalesced, Seq(owner -> layout), oneSided = true)
    val exposedIds = layout.take(2).map(c => (owner, c.request(0).blockId: BlockId))
    assert(oneSided.exposed === exposedIds.map(_ -> region).toMap)
    assert(
      listed(oneSided)("o") === (exposedIds
        .map(_._2.name) :+ RangeRequest(0, 7, 9).blockId.name).toSet)
    assert(oneSided.chunksInRanges === 2)
    // Read through the block server, the same chunks come in one range.
    val served = planOf(coalesced, Seq(owner -> layout))
    assert(
      served.exposed.isEmpty && listed(served)("o") === Set(RangeRequest(0, 5, 9).blockId.name))
  }

  test("chunks of one id at owners of two table versions are told apart by their holder") {
    // Maps 1 and 2 pushed partition 5 to owner o by the first table, maps 3 and 4 to a by the
    // second: each merged it into its own chunk 0.
    val plan =
      planOf(needed(1, 2, 3, 4), Seq(owner -> Seq(chunk(0, 1, 2)), a -> Seq(chunk(0, 3, 4))))
    val id = chunk(0, 1, 2).request(0).blockId
    assert(plan.chunks.keySet === Set[(BlockManagerId, BlockId)]((owner, id), (a, id)))
    assert(
      plan.chunks((owner, id)).parts.map(_.block.blockId.name) === Seq(
        "shuffle_0_1_5",
        "shuffle_0_2_5"))
    assert(
      plan.chunks((a, id)).parts.map(_.block.blockId.name) === Seq(
        "shuffle_0_3_5",
        "shuffle_0_4_5"))
    assert(listed(plan) === Map("o" -> Set(id.name), "a" -> Set(id.name)))
  }
}
