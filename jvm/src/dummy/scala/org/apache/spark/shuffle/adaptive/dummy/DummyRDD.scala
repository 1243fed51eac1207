package org.apache.spark.shuffle.adaptive.dummy

import java.util.SplittableRandom

import org.apache.spark.{Partition, SparkContext, TaskContext}
import org.apache.spark.rdd.{RDD, ShuffledRDD}

/**
 * Generates the chunks of a [[DummySpec]] as `(destination, payload)` records, on the executors:
 * partition i yields n chunks, in order, each with its Zipf-drawn destination. Partition i's
 * draws and bytes come from a generator seeded by (seed, i) alone, so the same seed always
 * gives the same data, whatever runs where. Payloads are random bytes (incompressible) unless the
 * spec asks for compressible ones (a repeated byte pattern).
 */
private[spark] final class DummyRDD(sc: SparkContext, val spec: DummySpec)
    extends RDD[(Int, Array[Byte])](sc, Nil) {

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](spec.numPartitions)(i => DummyPartition(i))

  override def compute(split: Partition, context: TaskContext): Iterator[(Int, Array[Byte])] = {
    val index = split.index
    val random = new SplittableRandom(DummyRDD.partitionSeed(spec.seed, index))
    val destinations = spec.destinations
    spec.chunkSizes(index).iterator.map { size =>
      val destination = destinations.destination(random.nextDouble())
      val payload = new Array[Byte](size)
      if (spec.compressible) {
        java.util.Arrays.fill(payload, (destination & 0x7f).toByte)
      } else {
        random.nextBytes(payload)
      }
      (destination, payload)
    }
  }

  /**
   * The shuffle the paper measures: every chunk to its drawn destination, of this RDD's chunks
   * or of `chunks` (this RDD with its tasks placed, say).
   */
  def shuffled(chunks: RDD[(Int, Array[Byte])] = this): ShuffledRDD[Int, Array[Byte], Array[Byte]] =
    new ShuffledRDD[Int, Array[Byte], Array[Byte]](
      chunks,
      new DestinationPartitioner(spec.numPartitions))
}

private[spark] object DummyRDD {

  /**
   * Mixes the partition index into the seed (a 64-bit finaliser), so that partitions start their
   * streams at unrelated points rather than at neighbouring ones.
   */
  def partitionSeed(seed: Long, index: Int): Long = {
    var z = seed + (index + 1L) * 0x9e3779b97f4a7c15L
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z ^ (z >>> 31)
  }
}

private final case class DummyPartition(index: Int) extends Partition
