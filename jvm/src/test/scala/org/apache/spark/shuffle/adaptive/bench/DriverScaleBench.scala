package org.apache.spark.shuffle.adaptive.bench

import java.io.{ByteArrayOutputStream, ObjectOutputStream}
import java.nio.ByteBuffer

import scala.concurrent.Future
import scala.concurrent.duration._
import scala.util.Random

import org.roaringbitmap.longlong.Roaring64NavigableMap

import org.apache.spark.scheduler.{HighlyCompressedMapStatus, MapStatus}
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.push.protocol.{MergedPartition, OwnerTable, PushPayloads}
import org.apache.spark.shuffle.adaptive.push.driver.{MergeSummaries, OwnerPlacement, TableArithmetic, PushDriver}
import org.apache.spark.shuffle.adaptive.push.owner.{MergeStore, MergeStoreSuite}
import org.apache.spark.shuffle.adaptive.push.reduce.MergedReads

/**
 * What one shuffle of `maps` map outputs x `partitions` reduce partitions x `executors`
 * executors costs the driver, and a reduce task's look-up of where its partition was merged, by
 * simulation (no executors): mode=push (the owner table placed when the map stage is submitted,
 * carried by every task, and placed again by the first map outputs' sizes; an
 * owner's layout of a partition every map output was merged into; a reduce task's read plan; the
 * driver's summary of what the owners merged, collected at the map stage's end, with every map
 * output merged into every partition and with a random 90% of them). Prints the figures. Run by `make bench-driver-scale`.
 */
object DriverScaleBench {

  private def usedHeap(): Long = {
    val rt = Runtime.getRuntime
    (1 to 3).foreach(_ => System.gc())
    rt.totalMemory - rt.freeMemory
  }

  private def timed[T](f: => T): (T, Double) = {
    val start = System.nanoTime()
    val result = f
    (result, (System.nanoTime() - start) / 1e6)
  }

  private def serializedSize(o: AnyRef): Int = {
    val bytes = new ByteArrayOutputStream
    val out = new ObjectOutputStream(bytes)
    out.writeObject(o)
    out.close()
    bytes.size
  }

  def main(args: Array[String]): Unit = {
    val Array(maps, partitions, executors) =
      if (args.length == 3) args.map(_.toInt) else Array(100000, 10000, 1000)
    val blockSize = 64L
    println(s"one shuffle: $maps map outputs x $partitions partitions x $executors executors")
    val ids = (0 until executors).map(i => BlockManagerId(i.toString, s"host-$i", 7000))

    // mode=push, the driver: the table, placed when the map stage is submitted.
    val before = usedHeap()
    val (table, placeMs) = timed(TableArithmetic.uniform(partitions, ids))
    val tableHeap = usedHeap() - before
    val (_, refreshMs) = timed(table.keepingOnly(ids.map(_.executorId).toSet - "7"))
    println(
      f"push  driver: placement $placeMs%.1f ms once per shuffle, refresh at a reduce " +
        f"stage's submission $refreshMs%.2f ms, table ${math.max(0, tableHeap) / 1024.0}%.0f KiB " +
        f"of heap, ${serializedSize(table) / 1024.0}%.0f KiB in each stage's task binary; " +
        "per map output: no message, no state (0 us)")

    // The driver placing owners again by size once a tenth of the maps succeeded: the sizes of
    // the first PredictFromMaps MapStatuses (Zipf-skewed, as Spark compresses them for 10,000
    // partitions) predict each partition's; balanced placement; one upload per executor.
    val zipf = Array.tabulate(partitions)(p => 1e6 / (p + 1))
    val statuses = (0 until math.min(maps, PushDriver.PredictFromMaps)).map { m =>
      MapStatus(ids(m % executors), zipf.map(_.toLong), m.toLong)
    }
    val (predicted, predictMs) = timed {
      val sizes = new Array[Long](partitions)
      statuses.foreach(s => (0 until partitions).foreach(r => sizes(r) += s.getSizeForBlock(r)))
      sizes
    }
    val (next, nextMs) = timed(OwnerPlacement.next(table, predicted))
    val sizes = predicted.map(_.toDouble)
    def share(t: OwnerTable) = f"${TableArithmetic.maxLoad(t, sizes) / sizes.sum}%.3f"
    println(
      f"push  driver placement by size: ${statuses.size} MapStatuses read in $predictMs%.0f ms, " +
        f"placed in $nextMs%.1f ms; largest owner share ${share(table)} -> " +
        next.fold("kept (the sizes look even")(t => s"${share(t)} (version ${t.version}") +
        (if (statuses.head.isInstanceOf[HighlyCompressedMapStatus])
           ": Spark keeps an average for all but huge blocks above 2,000 partitions)"
         else ")") +
        f", ${PushPayloads.encodeTable(next.getOrElse(table)).remaining / 1024.0}%.0f KiB to " +
        "each executor once; per map output: no message (0 us)")

    // An owner's end: one partition into which every map output was merged.
    val store =
      new MergeStore(
        new MemoryBound(Long.MaxValue),
        4L << 20,
        MergeStoreSuite.noDisk,
        () => None,
        _ => ())
    val data = ByteBuffer.allocateDirect(blockSize.toInt)
    val (_, appendMs) = timed((0 until maps).foreach { m =>
      store.intake.append(0, m.toLong, 0, Array(blockSize), data.duplicate())
    })
    val (layout, layoutMs) = timed(store.serving.layout(0, 0, 1, forPeer = true))
    val layoutBytes = PushPayloads.encodeLayout(layout).remaining
    println(
      f"push  owner: $maps blocks of one partition appended in $appendMs%.0f ms " +
        f"(${appendMs * 1000 / maps}%.2f us each), layout of ${layout.size} chunks in " +
        f"$layoutMs%.1f ms, ${layoutBytes / 1024.0}%.0f KiB on the wire")

    // A reduce task's plan: its partition's blocks as the map output tracker lists them.
    val byAddress = ids.map { home =>
      home -> (home.executorId.toInt until maps by executors).map { m =>
        BlockRef(ShuffleBlockId(0, m.toLong, 0), blockSize, m)
      }
    }
    // The first plan runs cold; a long job's reduce tasks run warm.
    val plans =
      (1 to 5).map(_ =>
        timed(
          MergedReads
            .plan(new FetchCounters, 0, byAddress, Seq(ids.head -> layout), 4L << 20, false)))
    val planMs = plans.map(_._2)
    println(
      f"push  reduce task of $maps blocks: layout from its owner $layoutMs%.1f ms, plan " +
        f"into ${plans.head._1.chunks.size} chunk reads ${planMs.head}%.0f ms cold, " +
        f"${planMs.tail.min}%.0f ms warm (${planMs.tail.min * 1000 / maps}%.2f us per block); " +
        "no driver look-up")

    // The driver at the map stage's end: every owner's summary of its partitions, decoded as
    // it arrives. Map ids are task attempt ids, close together: all merged is one run; a
    // random 90% is the incompressible case.
    val owned = math.max(1, partitions / executors)
    Seq("all map outputs merged" -> 1.0, "a random 90% merged" -> 0.9).foreach {
      case (label, share) =>
        val random = new Random(7)
        val answer = PushPayloads.encodeSummary((0 until owned).map { p =>
          val merged = new Roaring64NavigableMap
          if (share >= 1.0) merged.addRange(0L, maps.toLong)
          else (0 until maps).foreach(m => if (random.nextDouble() < share) merged.addLong(m))
          merged.runOptimize()
          MergedPartition(p, blockSize * maps, 1, merged)
        })
        val summaries = new MergeSummaries(
          (owner, _, _) =>
            Future.successful(PushPayloads.decodeSummary(answer).map { p =>
              p.copy(partition = p.partition + owner.executorId.toInt * owned)
            }),
          1.minute,
          _ => blockSize * maps * partitions,
          _ => ())
        summaries.register(0, () => Some(Seq(table)))
        val heapBefore = usedHeap()
        val (summary, collectMs) = timed(summaries.collect(0, Seq(table)))
        val heap = usedHeap() - heapBefore
        summaries.stop()
        println(
          f"push  driver summary at the map stage's end ($label): ${summary.ownersAnswered} " +
            f"owners' answers in $collectMs%.0f ms (${collectMs * 1000 / maps}%.2f us per map " +
            f"output), ${summary.stateBytes / 1048576.0}%.1f MiB of state " +
            f"(${math.max(0, heap) / 1048576.0}%.1f MiB of heap), " +
            f"${answer.remaining / 1024.0}%.0f KiB per owner's answer")
    }
  }
}
