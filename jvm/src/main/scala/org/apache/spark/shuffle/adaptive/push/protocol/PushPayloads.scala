package org.apache.spark.shuffle.adaptive.push.protocol

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/**
 * The payloads of mode=push's messages: owner tables the driver uploads ([[TableUpload]]),
 * executors' summaries ([[SummaryRequest]]) and layouts (the chunks an owner holds of a partition
 * range: [[LayoutRequest]]).
 */
private[spark] object PushPayloads {

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

  /** The partitions an owner sealed, as a bit set's bytes (a few bits per partition asked). */
  def encodeSealed(partitions: java.util.BitSet): ByteBuffer =
    ByteBuffer.wrap(partitions.toByteArray)

  def decodeSealed(in: ByteBuffer): java.util.BitSet = java.util.BitSet.valueOf(in)

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

  /**
   * Chunk count, then per chunk: id, partition, block count, each block's map id and length,
   * where it is held (0: at the owner; 1: at a peer, then its executor id, host and port), and
   * its region (0: none; 1: address, remote key length, remote key, length).
   */
  def encodeLayout(chunks: Seq[MergedChunk]): ByteBuffer = {
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

  def decodeLayout(in: ByteBuffer): Seq[MergedChunk] = {
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
