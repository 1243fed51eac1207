package org.apache.spark.shuffle.adaptive.combine.store

import java.io.{File, IOException, OutputStream}
import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.util.TransportConf
import org.apache.spark.serializer.Serializer
import org.apache.spark.storage.BlockId
import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.shuffle.adaptive.protocol.MessageHandler
import org.apache.spark.shuffle.adaptive.combine.protocol.{CombineRequest, CombinedAnswer, CombinedPayload, CombinedReadRequest}
import org.apache.spark.shuffle.adaptive.combine.CombineSpec

/**
 * One executor's local reduction: the combined records of each shuffle whose records combine
 * ([[CombinedShuffle]]), in `memory`, their segments on disk (files from `newFile`, one per
 * shuffle) when memory is short; what it answers of the plugin's messages: combined reads.
 * Thread-safe.
 */
private[spark] final class CombineStore(
    val memory: CombineMemory,
    wrap: => (BlockId, OutputStream) => OutputStream,
    newFile: () => File,
    transport: TransportConf)
    extends MessageHandler {

  private[this] val shuffles = new ConcurrentHashMap[Int, CombinedShuffle]
  private[this] val removed = ConcurrentHashMap.newKeySet[Integer]()

  /** The combined records of `shuffleId` here, made with the first map task that combines. */
  def shuffle(
      shuffleId: Int,
      numPartitions: Int,
      spec: CombineSpec,
      serializer: Serializer): Option[CombinedShuffle] =
    Option(
      shuffles.computeIfAbsent(
        shuffleId,
        id =>
          if (removed.contains(id)) null
          else
            new CombinedShuffle(
              id,
              numPartitions,
              spec,
              serializer,
              memory,
              wrap,
              () => new SpillFile(newFile(), transport))))

  /**
   * What this executor combined of partitions `[start, end)` of `shuffleId` (see
   * [[CombinedShuffle.read]]); an answer saying it holds none of the shuffle where it holds
   * nothing of it (never combined here, or removed).
   */
  def read(shuffleId: Int, start: Int, end: Int): ManagedBuffer =
    Option(shuffles.get(shuffleId)).fold[ManagedBuffer](
      new NioManagedBuffer(CombinedPayload.encode(CombinedAnswer.Unknown)))(_.read(start, end))

  override def kinds: Set[Int] = CombineRequest.Kinds

  override def answer(id: BlockId): ManagedBuffer = id match {
    case CombineRequest(CombinedReadRequest(shuffleId, start, end)) => read(shuffleId, start, end)
    case _ => throw new IOException(s"$id: not a request of local reduction")
  }

  override def receive(id: BlockId): StreamCallbackWithID =
    throw new IOException(s"$id: local reduction takes no uploads")

  def removeShuffle(shuffleId: Int): Unit = {
    removed.add(shuffleId)
    Option(shuffles.remove(shuffleId)).foreach(_.remove())
  }

  def clear(): Unit = shuffles.keySet.forEach(id => removeShuffle(id))
}
