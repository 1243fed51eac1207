package org.apache.spark.shuffle.adaptive.push

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.shuffle.adaptive.transport.RemoteRegion
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId}

/**
 * One chunk of a reduce partition merged at its owner: the blocks of `mapIds` (map ids as in
 * their MapStatus) in that order, `lengths` bytes each, back to back. `hostedAt` is the peer
 * that holds it when the owner handed it off (remote-memory spill); otherwise the owner does.
 * `region` is where peers read it one-sided, if its holder exposed it (UCX).
 */
private[spark] final case class MergedChunk(
    chunkId: Int,
    partition: Int,
    mapIds: Array[Long],
    lengths: Array[Long],
    hostedAt: Option[BlockManagerId] = None,
    region: Option[RemoteRegion] = None) {
  def bytes: Long = lengths.sum
}

/**
 * What an owner merged of one reduce partition: `bytes` in `chunks` chunks, of the map outputs
 * in `mapIds` (map ids as in their MapStatus).
 */
private[spark] final case class MergedPartition(
    partition: Int,
    bytes: Long,
    chunks: Int,
    mapIds: Roaring64NavigableMap)

/**
 * How reduce tasks name what an owner merged. They are shuffle batch block ids, which Spark's
 * block server hands to the shuffle manager's resolver and its fetch protocol carries in one
 * request, with a negative map id, which no map task has: -1 for the layout of partitions
 * `[start, end)` (which seals them: nothing more is merged into them), -2 for the room an
 * executor has for other owners' chunks (shuffle 0: room is executor-wide), -3 for what the
 * executor merged of the shuffle so far (its summary), -4 for the chunks of partitions
 * `[start, end)` the owner holds, back to back in their layout's order (one request for the
 * chunks of many small partitions), -5 - k for the owner's chunk k, and -2^32 - k for chunk k of
 * partition p that p's owner handed off to the executor asked ((p, k) is unique there: owners of
 * two table versions may each have a chunk k of p, and an executor refuses the second). Chunk ids
 * are an owner's own, so readers tell merged reads apart by holder and id. Spark's upload path parses only non-negative ids, so a hand-off travels as
 * `(shuffleId, k, p + 1, p)`: no run of a map output has a reversed range; and version v of an
 * owner table, which the driver uploads to executors, as `(shuffleId, v, 0, 0)`: no run is
 * empty.
 */
private[spark] object MergedBlocks {

  private val LayoutMapId = -1L
  private val RoomMapId = -2L
  private val SummaryMapId = -3L
  private val RangeMapId = -4L
  private val FirstChunkMapId = -5L
  private val FirstHostedMapId = -(1L << 32)

  def layout(shuffleId: Int, start: Int, end: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, LayoutMapId, start, end)

  /** A request for the room an executor has for other owners' chunks (of any shuffle). */
  val room: ShuffleBlockBatchId = ShuffleBlockBatchId(0, RoomMapId, 0, 1)

  /** Where a reader asks for `chunk`: at its owner, or at the peer it was handed off to. */
  def chunk(shuffleId: Int, chunk: MergedChunk): ShuffleBlockBatchId =
    if (chunk.hostedAt.isDefined) hosted(shuffleId, chunk.partition, chunk.chunkId)
    else
      ShuffleBlockBatchId(
        shuffleId,
        FirstChunkMapId - chunk.chunkId,
        chunk.partition,
        chunk.partition + 1)

  /** The chunks the owner holds of partitions `[start, end)`, which a layout sealed. */
  def range(shuffleId: Int, start: Int, end: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, RangeMapId, start, end)

  /** A request for the chunks of a partition range: `(shuffleId, start, end)`. */
  object Range {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, RangeMapId, start, end) => Some((shuffleId, start, end))
      case _ => None
    }
  }

  def hosted(shuffleId: Int, partition: Int, chunkId: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, FirstHostedMapId - chunkId, partition, partition + 1)

  def isMerged(id: BlockId): Boolean = id match {
    case b: ShuffleBlockBatchId => b.mapId < 0
    case _ => false
  }

  /** A layout request: `(shuffleId, start, end)`. */
  object Layout {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, LayoutMapId, start, end) => Some((shuffleId, start, end))
      case _ => None
    }
  }

  /** How chunk `chunkId` of `partition` travels to the peer it is handed off to. */
  def handOff(shuffleId: Int, partition: Int, chunkId: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, chunkId, partition + 1, partition)

  /** A hand-off upload: `(shuffleId, partition, chunkId)`. */
  object HandOff {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, chunkId, start, end) if start > end && chunkId >= 0 =>
        Some((shuffleId, end, chunkId.toInt))
      case _ => None
    }
  }

  /** How version `version` of a shuffle's owner table travels to executors. */
  def tableUpdate(shuffleId: Int, version: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, version, 0, 0)

  /** An owner table's upload: `shuffleId`. */
  object TableUpdate {
    def unapply(id: BlockId): Option[Int] = id match {
      case ShuffleBlockBatchId(shuffleId, version, 0, 0) if version > 0 => Some(shuffleId)
      case _ => None
    }
  }

  /** Partitions, version, owner count, then per owner: executor id, host, port, first partition. */
  def encodeTable(table: OwnerTable): ByteBuffer = {
    val bytes = new ByteArrayOutputStream
    val out = new DataOutputStream(bytes)
    out.writeInt(table.numPartitions)
    out.writeInt(table.version)
    out.writeInt(table.owners.size)
    table.owners.zip(table.firstPartition).foreach { case (owner, first) =>
      out.writeUTF(owner.executorId)
      out.writeUTF(owner.host)
      out.writeInt(owner.port)
      out.writeInt(first)
    }
    out.close()
    ByteBuffer.wrap(bytes.toByteArray)
  }

  def decodeTable(in: ByteBuffer): OwnerTable = {
    val copy = new Array[Byte](in.remaining)
    in.duplicate().get(copy)
    val data = new DataInputStream(new ByteArrayInputStream(copy))
    val numPartitions = data.readInt()
    val version = data.readInt()
    val owners = Vector.fill(data.readInt()) {
      val owner = BlockManagerId(data.readUTF(), data.readUTF(), data.readInt())
      owner -> data.readInt()
    }
    OwnerTable(numPartitions, owners.map(_._1), owners.map(_._2), version = version)
  }

  def isRoom(id: BlockId): Boolean = id == room

  def summary(shuffleId: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, SummaryMapId, 0, 1)

  /** A summary request: `shuffleId`. */
  object Summary {
    def unapply(id: BlockId): Option[Int] = id match {
      case ShuffleBlockBatchId(shuffleId, SummaryMapId, _, _) => Some(shuffleId)
      case _ => None
    }
  }

  /** Partition count, then per partition: id, bytes, chunks, the map ids' serialized bitmap. */
  def encodeSummary(partitions: Seq[MergedPartition]): ByteBuffer = {
    val bytes = new ByteArrayOutputStream
    val out = new DataOutputStream(bytes)
    out.writeInt(partitions.size)
    partitions.foreach { p =>
      out.writeInt(p.partition)
      out.writeLong(p.bytes)
      out.writeInt(p.chunks)
      p.mapIds.serialize(out)
    }
    out.close()
    ByteBuffer.wrap(bytes.toByteArray)
  }

  def decodeSummary(in: ByteBuffer): Seq[MergedPartition] = {
    val copy = new Array[Byte](in.remaining)
    in.duplicate().get(copy)
    val data = new DataInputStream(new ByteArrayInputStream(copy))
    Seq.fill(data.readInt()) {
      val partition = data.readInt()
      val bytes = data.readLong()
      val chunks = data.readInt()
      val maps = new Roaring64NavigableMap
      maps.deserialize(data)
      MergedPartition(partition, bytes, chunks, maps)
    }
  }

  /** A request for one of the owner's chunks: `(shuffleId, chunkId)`. */
  object Chunk {
    def unapply(id: BlockId): Option[(Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, _, _)
          if mapId <= FirstChunkMapId && mapId > FirstHostedMapId =>
        Some((shuffleId, (FirstChunkMapId - mapId).toInt))
      case _ => None
    }
  }

  /** A hand-off of, or a request for, a chunk another owner handed off: `(shuffleId, partition, chunkId)`. */
  object Hosted {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, partition, _) if mapId <= FirstHostedMapId =>
        Some((shuffleId, partition, (FirstHostedMapId - mapId).toInt))
      case _ => None
    }
  }

  /**
   * Chunk count, then per chunk: id, partition, block count, each block's map id and length,
   * where it is held (0: at the owner; 1: at a peer, then its executor id, host and port), and
   * its region (0: none; 1: address, remote key length, remote key, length).
   */
  def encode(chunks: Seq[MergedChunk]): ByteBuffer = {
    val hosts = chunks.map(
      _.hostedAt.map(a => (a.executorId.getBytes(UTF_8), a.host.getBytes(UTF_8), a.port)))
    val size = 4 + chunks.iterator.map(c => 14 + 16 * c.mapIds.length).sum +
      hosts.iterator.flatten.map { case (id, host, _) => 12 + id.length + host.length }.sum +
      chunks.iterator.flatMap(_.region).map(20 + _.rkey.length).sum
    val out = ByteBuffer.allocate(size).putInt(chunks.size)
    chunks.zip(hosts).foreach { case (c, host) =>
      out.putInt(c.chunkId).putInt(c.partition).putInt(c.mapIds.length)
      c.mapIds.indices.foreach(i => out.putLong(c.mapIds(i)).putLong(c.lengths(i)))
      host match {
        case None => out.put(0.toByte)
        case Some((id, hostName, port)) =>
          out
            .put(1.toByte)
            .putInt(id.length)
            .put(id)
            .putInt(hostName.length)
            .put(hostName)
            .putInt(port)
      }
      c.region match {
        case None => out.put(0.toByte)
        case Some(r) =>
          out.put(1.toByte).putLong(r.address).putInt(r.rkey.length).put(r.rkey).putLong(r.length)
      }
    }
    out.flip()
  }

  def decode(in: ByteBuffer): Seq[MergedChunk] = {
    val buf = in.duplicate()
    Seq.fill(buf.getInt) {
      val chunkId = buf.getInt
      val partition = buf.getInt
      val count = buf.getInt
      val mapIds = new Array[Long](count)
      val lengths = new Array[Long](count)
      (0 until count).foreach { i =>
        mapIds(i) = buf.getLong
        lengths(i) = buf.getLong
      }
      def bytes() = {
        val bytes = new Array[Byte](buf.getInt)
        buf.get(bytes)
        bytes
      }
      def text() = new String(bytes(), UTF_8)
      val hostedAt =
        if (buf.get == 0) None
        else {
          val executorId = text()
          val host = text()
          Some(BlockManagerId(executorId, host, buf.getInt))
        }
      val region =
        if (buf.get == 0) None
        else {
          val address = buf.getLong
          val rkey = bytes()
          Some(RemoteRegion(address, rkey, buf.getLong))
        }
      MergedChunk(chunkId, partition, mapIds, lengths, hostedAt, region)
    }
  }
}
