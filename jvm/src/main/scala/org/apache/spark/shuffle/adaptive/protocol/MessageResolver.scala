package org.apache.spark.shuffle.adaptive.protocol

import java.io.IOException

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver

/**
 * This executor's shuffle block resolver: each of the plugin's messages goes to the one feature
 * that numbers its kind (`handlers`: local reduction's store, mode=push's), every other block and
 * upload (a map output's, one block migration moves) to the map-output files through `files`.
 * Messages ride Spark's fetch and upload protocols, so they are authenticated and encrypted as
 * Spark's block transfers are.
 */
private[spark] final class MessageResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    handlers: Seq[MessageHandler])
    extends FilesBackedResolver(conf, files) {

  private[this] val byKind: Map[Int, MessageHandler] = MessageResolver.byKind(handlers)

  private def handlerOf(id: BlockId, kind: Int): MessageHandler =
    byKind.getOrElse(kind, throw new IOException(s"$id: no feature here reads message kind $kind"))

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case BlockMessage.Spelled(words) => handlerOf(blockId, words.kind).answer(blockId)
      case _ => files.getBlockData(blockId, dirs)
    }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID = blockId match {
    case BlockMessage.Spelled(words) => handlerOf(blockId, words.kind).receive(blockId)
    case run: ShuffleBlockBatchId =>
      handlers.iterator
        .flatMap(_.receiveRun(run))
        .nextOption()
        .getOrElse(throw new IOException(s"$run: nothing here takes it"))
    case _ => files.putShuffleBlockAsStream(blockId, serializerManager)
  }
}

private[spark] object MessageResolver {

  /** Each kind's handler; two features numbering one kind alike is a build error, named. */
  def byKind(handlers: Seq[MessageHandler]): Map[Int, MessageHandler] = {
    val shared = handlers.flatMap(_.kinds.toSeq).groupBy(identity).collect {
      case (kind, spelled) if spelled.size > 1 => kind
    }
    require(
      shared.isEmpty,
      s"message kinds ${shared.toSeq.sorted.mkString(", ")} are numbered " +
        "by more than one feature's MessageHandler")
    handlers.flatMap(h => h.kinds.toSeq.map(_ -> h)).toMap
  }
}
