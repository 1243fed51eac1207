package org.apache.spark.shuffle.adaptive.transport.ucx

import java.io.File
import java.nio.MappedByteBuffer
import java.nio.channels.FileChannel
import java.nio.file.StandardOpenOption

import scala.collection.mutable
import scala.util.control.NonFatal

import org.openucx.jucx.ucp.UcpMemory

import org.apache.spark.internal.Logging
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.transport.MapOutputServing
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry.RegisterRegion
import org.apache.spark.storage.StorageUtils

/**
 * Serves this executor's map outputs to one-sided reads: each committed data file is mapped
 * read-only into memory, registered with UCX, and its region (address, packed key, index)
 * published to the driver's [[UcxRegistry]] before the map task returns. Regions are
 * deregistered and unmapped when their shuffle is unregistered and when the executor stops.
 *
 * A data file longer than 2 GiB (the most one Java mapping holds) is not registered; peers read
 * it through Netty.
 */
private[spark] final class UcxMapOutputServing(
    executorId: String,
    node: UcxNode,
    registry: RpcEndpointRef,
    directory: UcxDirectory) extends MapOutputServing with Logging {

  private final class Mapped(val mapping: MappedByteBuffer, val memory: UcpMemory)

  private[this] val mapped = mutable.HashMap.empty[Int, mutable.ArrayBuffer[Mapped]]

  override def committed(shuffleId: Int, mapId: Long, dataFile: File, offsets: Array[Long]): Unit = {
    val length = offsets.last
    if (length > 0 && length <= UcxBlockTransport.MaxRead && dataFile.length() == length) {
      val mapping = FileChannel.open(dataFile.toPath, StandardOpenOption.READ)
      val buffer = try mapping.map(FileChannel.MapMode.READ_ONLY, 0, length) finally mapping.close()
      val registered = try {
        val memory = node.register(buffer)
        val rkey = node.remoteKey(memory)
        val entry = new Mapped(buffer, memory)
        synchronized(mapped.getOrElseUpdate(shuffleId, mutable.ArrayBuffer.empty) += entry)
        registry.askSync[Boolean](
          RegisterRegion(executorId, shuffleId, mapId, UcxRegion(memory.getAddress, rkey, offsets)))
      } catch {
        case NonFatal(e) =>
          logWarning(s"Map output $mapId of shuffle $shuffleId is served through Netty: " +
            "registering it with UCX failed", e)
          false
      }
      if (!registered) logDebug(s"Map output $mapId of shuffle $shuffleId has no UCX region")
    }
  }

  override def removed(shuffleId: Int): Unit = {
    val regions = synchronized(mapped.remove(shuffleId)).toSeq.flatten
    regions.foreach(release)
    directory.forgetShuffle(shuffleId)
    node.forgetShuffle(shuffleId)
  }

  override def stop(): Unit = {
    val regions = synchronized {
      val all = mapped.values.flatten.toList
      mapped.clear()
      all
    }
    regions.foreach(release)
  }

  private def release(region: Mapped): Unit = {
    try node.call(region.memory.deregister()) catch {
      case NonFatal(e) => logWarning("Could not deregister a map output's UCX region", e)
    }
    StorageUtils.dispose(region.mapping)
  }
}
