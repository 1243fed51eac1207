package org.apache.spark.shuffle.adaptive.protocol

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.{SparkConf, SparkFunSuite}
import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.combine.protocol.CombineRequest
import org.apache.spark.shuffle.adaptive.push.protocol.{PushRequest, PushUpload}
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

class MessageResolverSuite extends SparkFunSuite {

  /** A feature this suite makes up: it numbers `kinds`, answers with its name, takes runs. */
  private class Feature(name: String, val kinds: Set[Int], runs: Boolean = false)
      extends MessageHandler {
    override def answer(id: BlockId): ManagedBuffer =
      new NioManagedBuffer(ByteBuffer.wrap(s"$name:$id".getBytes))
    override def receive(id: BlockId): StreamCallbackWithID = stream(s"$name:$id")
    override def receiveRun(id: ShuffleBlockBatchId): Option[StreamCallbackWithID] =
      if (runs) Some(stream(s"$name run:$id")) else None
  }

  private def stream(id: String) = new StreamCallbackWithID {
    override def getID: String = id
    override def onData(streamId: String, buf: ByteBuffer): Unit = ()
    override def onComplete(streamId: String): Unit = ()
    override def onFailure(streamId: String, cause: Throwable): Unit = ()
  }

  private def resolver(handlers: MessageHandler*): MessageResolver = {
    val conf = new SparkConf
    new MessageResolver(conf, new IndexShuffleBlockResolver(conf), handlers)
  }

  private def text(buf: ManagedBuffer): String = {
    val b = buf.nioByteBuffer()
    val bytes = new Array[Byte](b.remaining)
    b.get(bytes)
    new String(bytes)
  }

  test("each message goes to the feature that numbers its kind; a new feature edits no list") {
    val third = BlockMessage.spell(3, 4000, 12, 0, 5)
    val r = resolver(new Feature("a", Set(1, 2)), new Feature("third", Set(4000)))
    assert(text(r.getBlockData(third, None)) === s"third:$third")
    assert(text(r.getBlockData(BlockMessage.spell(3, 2, 0, 0, 1), None)).startsWith("a:"))
    assert(r.putShuffleBlockAsStream(third, null).getID === s"third:$third")
  }

  test("a message of a kind nobody numbers is an error naming it, not a map output's read") {
    val r = resolver(new Feature("a", Set(1)))
    val e = intercept[IOException](r.getBlockData(BlockMessage.spell(3, 9, 0, 0, 1), None))
    assert(e.getMessage.contains("message kind 9"))
  }

  test("uploads spelled as a map output's blocks go to the feature that takes runs") {
    val run = ShuffleBlockBatchId(3, 17, 0, 4)
    assert(
      resolver(new Feature("a", Set(1)), new Feature("b", Set(2), runs = true))
        .putShuffleBlockAsStream(run, null)
        .getID === s"b run:$run")
    intercept[IOException](resolver(new Feature("a", Set(1))).putShuffleBlockAsStream(run, null))
  }

  test("two features numbering one kind alike fail the executor's start, naming the kind") {
    val e = intercept[IllegalArgumentException](
      resolver(new Feature("a", Set(1, 5)), new Feature("b", Set(5, 6))))
    assert(e.getMessage.contains("message kinds 5 are numbered by more than one"))
  }

  test("the plugin's features number their kinds apart") {
    val numbered = Seq(PushRequest.Kinds, PushUpload.Kinds, CombineRequest.Kinds)
    assert(numbered.map(_.size).sum === numbered.reduce(_ ++ _).size)
  }
}
