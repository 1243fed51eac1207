package org.apache.spark.shuffle.adaptive.protocol

import java.io.IOException

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.BlockId
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver

/**
 * What one feature answers of the plugin's messages ([[BlockMessage]]): the requests it serves
 * (fetched: the answer is a block's bytes) and the uploads it takes (streamed).
 */
private[spark] trait MessageHandler {
  def answer: PartialFunction[BlockMessage.Request, ManagedBuffer]
  def receive: PartialFunction[BlockMessage.Upload, StreamCallbackWithID]
}

/**
 * This executor's shuffle block resolver: each of the plugin's messages goes to the one feature
 * that handles it (`handlers`: local reduction's store, mode=push's), every other block and
 * upload (a map output's, one block migration moves) to the map-output files through `files`.
 * Messages ride Spark's fetch and upload protocols, so they are authenticated and encrypted as
 * Spark's block transfers are.
 */
private[spark] final class MessageResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    handlers: Seq[MessageHandler])
    extends FilesBackedResolver(conf, files) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case BlockMessage.Request(request) =>
        handlers
          .collectFirst { case h if h.answer.isDefinedAt(request) => h.answer(request) }
          .getOrElse(throw new IOException(s"$request: nothing here serves it"))
      case _ => files.getBlockData(blockId, dirs)
    }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID = blockId match {
    case BlockMessage.Upload(upload) =>
      handlers
        .collectFirst { case h if h.receive.isDefinedAt(upload) => h.receive(upload) }
        .getOrElse(throw new IOException(s"$upload: nothing here takes it"))
    case _ => files.putShuffleBlockAsStream(blockId, serializerManager)
  }
}
