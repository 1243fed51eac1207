package org.apache.spark.shuffle.adaptive.push.reduce

import scala.collection.immutable.VectorMap
import scala.collection.mutable
import scala.concurrent.Future
import scala.concurrent.duration._
import scala.util.control.NonFatal

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.push.protocol.{ChunkRunRequest, HostedChunkRequest, LayoutRequest, MergedChunk, OwnerTable, PushPayloads, PushRequest, RangeRequest}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.protocol.Ask
import org.apache.spark.shuffle.adaptive.push.owner.MergeStore
import org.apache.spark.shuffle.adaptive.fetch.BlockRef
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion
import org.apache.spark.shuffle.adaptive.read.BundledPart

/**
 * Where a reduce task reads its blocks in mode=push: the merged chunks of its partitions from
 * their owners, and the blocks not merged from their map outputs.
 *
 * @param blocks the blocks to fetch from their map outputs' executors, as the map output
 *               tracker's view lists them, without those read out of chunks
 * @param chunks the chunks the task reads, by their holder and id in the order to ask for them
 *               (a partition merged at owners of two versions of the table has chunks of the same
 *               id at each)
 * @param chunksAtPeers how many of those chunks are read at a peer their owner handed them to
 * @param chunksInRanges how many chunks are read as part of a partition range's request
 * @param exposed the chunks read one-sided, by holder and id, with their regions there
 */
private[spark] final case class MergedReads(
    blocks: Seq[(BlockManagerId, Seq[BlockRef])],
    chunks: VectorMap[(BlockManagerId, BlockId), MergedChunkRead],
    chunksAtPeers: Int,
    chunksInRanges: Int,
    exposed: Map[(BlockManagerId, BlockId), RemoteRegion]) {

  /** The chunks as the read plan's bundles, by holder, in the order to ask for them. */
  def bundles: Seq[(BlockManagerId, MergedChunkRead)] =
    chunks.iterator.map { case ((holder, _), read) => holder -> read }.toSeq
}

private[spark] object MergedReads extends Logging {

  /**
   * Takes from `byAddress` (the map output tracker's view: what the task must read, map
   * outputs Spark keeps only) every block that a chunk of `layouts` holds, and reads that chunk
   * instead. A chunk is read when at least half its bytes are blocks the task needs (the rest,
   * of maps outside the task's range or of attempts Spark did not keep, are skipped), or when it
   * holds a needed block whose map output's executor is among `lostHomes` (the chunk is then its
   * only copy), but not when it is held elsewhere and every block the task needs of it is in a
   * file of the task's own executor (`reader`); a block is read once, from the first chunk
   * that holds it, and never out of a chunk that names its map output twice.
   *
   * Reads are few and large, up to `requestBytes` each. The chunks an owner holds of
   * consecutive partitions the task reads whole are read in one request ([[RangeRequest]]): a
   * coalesced reduce task reads many small partitions, each merged into one small chunk, and
   * would otherwise pay a request and a stream per partition. A partition of more than
   * `requestBytes`, or one with a chunk left out, is read in runs of consecutive chunks, one
   * request each ([[ChunkRunRequest]]): an owner whose store overflowed holds a large partition
   * as many small chunks, and they are read as a handful of requests, not one each. A chunk its
   * owner handed off is read alone, at its peer. With `oneSided` (the task reads through UCX), a
   * chunk its holder exposed is read alone, one-sided out of its region: a read the holder does
   * not serve costs it nothing per request.
   */
  def plan(
      counters: FetchCounters,
      shuffleId: Int,
      byAddress: Seq[(BlockManagerId, Seq[BlockRef])],
      layouts: Seq[(BlockManagerId, Seq[MergedChunk])],
      requestBytes: Long,
      oneSided: Boolean,
      lostHomes: Set[String] = Set.empty,
      reader: Option[String] = None): MergedReads = {
    val needed = mutable.HashMap.empty[(Long, Int), (BlockManagerId, Int)]
    byAddress.foreach { case (home, blocks) =>
      blocks.foreach {
        case BlockRef(ShuffleBlockId(_, mapId, reduceId), size, mapIndex) if size > 0 =>
          needed((mapId, reduceId)) = (home, mapIndex)
        case _ =>
      }
    }
    val taken = mutable.HashSet.empty[(Long, Int)]
    // The parts of `chunk` (held at `holder`) the task reads, if it reads the chunk, which
    // takes their blocks.
    def select(holder: BlockManagerId, chunk: MergedChunk): Option[IndexedSeq[BundledPart]] = {
      var offset = 0L
      val keyedParts = chunk.mapIds.indices.flatMap { i =>
        val key = (chunk.mapIds(i), chunk.partition)
        val part = needed.get(key).filterNot(_ => taken(key)).map { case (home, mapIndex) =>
          key -> BundledPart(
            BlockRef(ShuffleBlockId(shuffleId, key._1, key._2), chunk.lengths(i), mapIndex),
            home,
            offset,
            chunk.lengths(i))
        }
        offset += chunk.lengths(i)
        part
      }
      val parts = keyedParts.map(_._2)
      // The owner merges a map output once; a chunk naming one twice is read from no chunk.
      val once = chunk.mapIds.distinct.length == chunk.mapIds.length
      val onlyCopy = parts.exists(part => lostHomes(part.home.executorId))
      // A replica holds blocks of one executor's map outputs: read on that executor, they are
      // in its own files.
      val inOwnFiles =
        reader.exists(self => holder.executorId != self && parts.forall(_.home.executorId == self))
      if (parts.nonEmpty && once && !inOwnFiles &&
        (onlyCopy || 2 * parts.iterator.map(_.length).sum >= chunk.bytes)) {
        taken ++= keyedParts.map(_._1)
        Some(parts)
      } else None
    }
    val chunks = VectorMap.newBuilder[(BlockManagerId, BlockId), MergedChunkRead]
    var inRanges = 0
    val exposed = Map.newBuilder[(BlockManagerId, BlockId), RemoteRegion]
    def read(at: BlockManagerId, id: BlockId, bytes: Long, parts: IndexedSeq[BundledPart]): Unit =
      chunks += (at, id) -> new MergedChunkRead(id, parts, bytes, counters)
    // A chunk in a request of its own, where it is held.
    def readChunk(
        owner: BlockManagerId,
        chunk: MergedChunk,
        parts: IndexedSeq[BundledPart]): Unit = {
      val holder = chunk.hostedAt.getOrElse(owner)
      val id = chunk.request(shuffleId).blockId
      read(holder, id, chunk.bytes, parts)
      if (oneSided) chunk.region.foreach(region => exposed += (holder, id) -> region)
    }
    def alone(chunk: MergedChunk) = chunk.hostedAt.isDefined || oneSided && chunk.region.isDefined
    layouts.foreach { case (owner, layout) =>
      val selected = layout.map(chunk => chunk -> select(chunk.hostedAt.getOrElse(owner), chunk))
      selected.foreach {
        case (chunk, Some(parts)) if alone(chunk) =>
          readChunk(owner, chunk, parts)
        case _ =>
      }
      // Chunks gathered for one request of up to `requestBytes`, which the owner serves back to
      // back as `request` names them; one chunk alone is read as itself.
      final class Gathered(request: Seq[(MergedChunk, IndexedSeq[BundledPart])] => PushRequest) {
        private[this] val chunks = mutable.ArrayBuffer.empty[(MergedChunk, IndexedSeq[BundledPart])]
        private[this] var bytes = 0L

        def fits(more: Long): Boolean = bytes + more <= requestBytes

        def add(chunk: MergedChunk, parts: IndexedSeq[BundledPart]): Unit = {
          chunks += chunk -> parts
          bytes += chunk.bytes
        }

        /** Reads what was gathered; answers how many chunks that was. */
        def readGathered(): Int = {
          val many = chunks.toSeq
          many match {
            case Seq() =>
            case Seq((chunk, parts)) => readChunk(owner, chunk, parts)
            case _ =>
              val starts = many.scanLeft(0L)(_ + _._1.bytes)
              val parts = many.zip(starts).flatMap { case ((_, ps), start) =>
                ps.map(p => p.copy(offset = p.offset + start))
              }
              read(owner, request(many).blockId, starts.last, parts.toIndexedSeq)
          }
          chunks.clear()
          bytes = 0L
          many.size
        }
      }
      val range = new Gathered(many =>
        RangeRequest(shuffleId, many.head._1.partition, many.last._1.partition + 1))
      def flush(): Unit = {
        val gathered = range.readGathered()
        if (gathered > 1) inRanges += gathered
      }
      // Runs of a partition's consecutive chunks the task reads, each up to a request's size.
      def readRuns(of: Seq[(MergedChunk, Option[IndexedSeq[BundledPart]])]): Unit = {
        val run = new Gathered(many =>
          ChunkRunRequest(
            shuffleId,
            many.head._1.partition,
            many.head._1.chunkId,
            many.last._1.chunkId + 1))
        of.foreach {
          case (chunk, Some(parts)) if !alone(chunk) =>
            if (!run.fits(chunk.bytes)) run.readGathered()
            run.add(chunk, parts)
          case _ =>
            // The owner serves every chunk it holds between a run's first and last.
            run.readGathered()
        }
        run.readGathered()
      }
      // Each partition's chunks in their layout's order, which is the order the owner serves.
      val held = selected.filter(_._1.hostedAt.isEmpty).groupBy(_._1.partition).toSeq.sortBy(_._1)
      held.foreach { case (_, of) =>
        val bytes = of.iterator.map(_._1.bytes).sum
        // A range holds every chunk of its partitions that the owner has.
        if (of.forall { case (c, parts) =>
            parts.isDefined && !alone(c)
          } && bytes <= requestBytes) {
          if (!range.fits(bytes)) flush()
          of.foreach { case (chunk, parts) => range.add(chunk, parts.get) }
        } else {
          flush()
          readRuns(of)
        }
      }
      flush()
    }
    val left = byAddress.map { case (home, blocks) =>
      home -> blocks.filter {
        case BlockRef(ShuffleBlockId(_, mapId, reduceId), _, _) => !taken((mapId, reduceId))
        case _ => true
      }
    }
    val result = chunks.result()
    MergedReads(
      left,
      result,
      result.keys.count { case (_, id) =>
        PushRequest.unapply(id).exists(_.isInstanceOf[HostedChunkRequest])
      },
      inRanges,
      exposed.result())
  }

  /**
   * Asks each owner of partitions `[start, end)` in any version of the table (and each replica,
   * where `replicated`) for their layout (which seals them there),
   * this executor's own store directly and the others through Spark's block transfer service,
   * all at once. An owner that has not answered `timeout` after the asking merged nothing for
   * this task: the task waits for one deadline, however many owners do not answer.
   */
  def layouts(
      env: SparkEnv,
      own: MergeStore,
      shuffleId: Int,
      owners: Seq[OwnerTable],
      start: Int,
      end: Int,
      replicated: Boolean,
      timeout: FiniteDuration): Seq[(BlockManagerId, Seq[MergedChunk])] = {
    val self = env.blockManager.blockManagerId.executorId
    val asked = OwnerTable.ranges(owners, start, end, replicated).map { case (owner, from, until) =>
      val layout =
        if (owner.executorId == self)
          Future.successful(own.serving.layout(shuffleId, from, until, forPeer = false))
        else Ask(env, owner, LayoutRequest(shuffleId, from, until))(PushPayloads.decodeLayout)
      owner -> layout
    }
    Ask.all(asked, timeout).map { case (owner, layout) =>
      owner -> layout.recover { case NonFatal(e) =>
        logWarning(
          s"No layout of shuffle $shuffleId's partitions from $owner; reading " +
            "their blocks from the map outputs",
          e)
        Seq.empty[MergedChunk]
      }.get
    }
  }
}
