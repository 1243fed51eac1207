package org.apache.spark.shuffle.adaptive.transport

import java.io.IOException
import java.nio.ByteBuffer

import scala.concurrent.Promise
import scala.util.{Failure, Success}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.ShuffleBlockId

class BlockUploadsSuite extends AnyFunSuite {

  private val id = ShuffleBlockId(0, 1, 2)

  test("an upload answered and then failed keeps its answer, and throws nothing into Netty") {
    val done = Promise[Unit]()
    val callback = BlockUploads.answered(done, "peer:1", id)
    callback.onSuccess(ByteBuffer.allocate(0))
    callback.onFailure(new IOException("the rest of the stream could not be written"))
    assert(done.future.value === Some(Success(())))
  }

  test("a refusal, then a failure: refused") {
    val done = Promise[Unit]()
    val callback = BlockUploads.answered(done, "peer:1", id)
    callback.onSuccess(ByteBuffer.wrap(Array[Byte](1)))
    callback.onFailure(new IOException("closed"))
    assert(done.future.value.exists {
      case Failure(e: BlockUploads.RefusedUpload) => e.getMessage.contains("peer:1")
      case _ => false
    })
  }

  test("a failure, then a late answer: failed") {
    val done = Promise[Unit]()
    val callback = BlockUploads.answered(done, "peer:1", id)
    val cause = new IOException("reset")
    callback.onFailure(cause)
    callback.onSuccess(ByteBuffer.allocate(0))
    assert(done.future.value === Some(Failure(cause)))
  }
}
