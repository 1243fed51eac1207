package org.apache.spark.shuffle.adaptive.metrics

import java.nio.ByteBuffer
import java.util.Properties
import java.util.concurrent.atomic.AtomicReference

import scala.collection.mutable

import org.apache.spark.{LocalSparkContext, SparkContext, SparkFunSuite, TaskContext, TaskContextImpl}
import org.apache.spark.executor.TaskMetrics
import org.apache.spark.serializer.JavaSerializer
import org.apache.spark.util.AccumulatorV2

/**
 * The executor's heartbeater reads every accumulator registered with a running task, from its
 * own thread, as soon as Spark registered it: which `AccumulatorV2.readObject` does before the
 * subclass's fields are deserialized.
 */
class FetchMetricsAccumulatorSuite extends SparkFunSuite with LocalSparkContext {

  /** What `Executor.reportHeartBeat` does with a task's accumulators, message serialization too. */
  private def heartbeat(accumulators: Seq[AccumulatorV2[_, _]]): Unit = {
    val reported = accumulators.filterNot(_.isZero).filterNot(_.excludeFromHeartbeat)
    new JavaSerializer(sc.conf).newInstance().serialize(reported.toArray)
  }

  /** A task context whose registration of an accumulator calls `onRegister` with it at once. */
  private def taskContext(onRegister: AccumulatorV2[_, _] => Unit): TaskContextImpl =
    new TaskContextImpl(0, 0, 0, 0, 0, 1, null, new Properties, null, TaskMetrics.empty, 1) {
      override def registerAccumulator(a: AccumulatorV2[_, _]): Unit = {
        super.registerAccumulator(a)
        onRegister(a)
      }
    }

  /** The driver's accumulator of a shuffle, as a task receives it. */
  private def shipped(): ByteBuffer = {
    val driverSide = new FetchMetricsAccumulator
    sc.register(driverSide, FetchMetricsAccumulator.NamePrefix + 0)
    driverSide.add(counters(7))
    new JavaSerializer(sc.conf).newInstance().serialize(driverSide)
  }

  private def counters(requests: Long): FetchCounters = {
    val c = new FetchCounters
    c.add(FetchCounters.Requests, requests)
    c.served("1", "netty", 100)
    c
  }

  private def deserializeInTask(bytes: ByteBuffer, context: TaskContext): FetchMetricsAccumulator =
    try {
      TaskContext.setTaskContext(context)
      new JavaSerializer(sc.conf).newInstance().deserialize[FetchMetricsAccumulator](bytes)
    } finally TaskContext.unset()

  test("a heartbeat at the moment Spark registers a task's copy sees zero counters, not null") {
    sc = new SparkContext("local", "test")
    val seen = mutable.ArrayBuffer.empty[(Boolean, Boolean)]
    val context = taskContext { a =>
      heartbeat(Seq(a))
      seen += ((a.isZero, a.value.asInstanceOf[FetchCounters].isZero))
    }
    val copy = deserializeInTask(shipped(), context)
    assert(seen === Seq((true, true)))
    assert(context.taskMetrics.accumulators().contains(copy))
    copy.value.add(FetchCounters.Requests, 3)
    assert(!copy.isZero && copy.value(FetchCounters.Requests) === 3)
  }

  test("heartbeats never carry it: a task's counters leave the task whole, when it ends") {
    sc = new SparkContext("local", "test")
    val copy = deserializeInTask(shipped(), taskContext(_ => ()))
    copy.value.add(FetchCounters.Requests, 5)
    assert(!copy.isZero)
    assert(copy.excludeFromHeartbeat)
    val back = new JavaSerializer(sc.conf)
      .newInstance()
      .deserialize[FetchMetricsAccumulator](
        new JavaSerializer(sc.conf).newInstance().serialize(copy))
    assert(back.value(FetchCounters.Requests) === 5)
    assert(back.value(FetchCounters.BytesBySource).toMap === Map.empty)
  }

  test("deserialized on one thread while a heartbeater reads it on another, many times") {
    sc = new SparkContext("local", "test")
    val bytes = shipped()
    val registered = new AtomicReference[AccumulatorV2[_, _]]
    val failure = new AtomicReference[Throwable]
    @volatile var done = false
    val heartbeater = new Thread(() =>
      while (!done && failure.get == null) {
        val a = registered.get
        if (a != null)
          try {
            a.isZero
            a.value
            heartbeat(Seq(a))
          } catch { case t: Throwable => failure.set(t) }
      })
    heartbeater.start()
    try {
      (1 to 2000).foreach { _ =>
        val copy = deserializeInTask(bytes.duplicate(), taskContext(registered.set))
        copy.value.add(FetchCounters.Requests, 1)
        copy.value.served("2", "netty", 10)
      }
    } finally {
      done = true
      heartbeater.join()
    }
    assert(failure.get === null, s"the heartbeater failed: ${failure.get}")
  }

  test("driver side: merges of tasks' copies add up, copies share nothing") {
    val acc = new FetchMetricsAccumulator
    val a = new FetchMetricsAccumulator
    a.add(counters(2))
    acc.merge(a)
    acc.merge(a)
    assert(acc.value(FetchCounters.Requests) === 4)
    val copy = acc.copy()
    copy.add(counters(1))
    assert(acc.value(FetchCounters.Requests) === 4 && copy.value(FetchCounters.Requests) === 5)
    copy.reset()
    assert(copy.isZero && !acc.isZero)
  }
}
