package org.apache.spark.shuffle.adaptive.transport.ucx

import java.util.concurrent.TimeUnit

import org.apache.spark.{SparkEnv, SparkException}
import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.{EXECUTOR_CORES, NETWORK_AUTH_ENABLED, REDUCER_MAX_SIZE_IN_FLIGHT}
import org.apache.spark.internal.config.Network.NETWORK_TIMEOUT
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf._
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry.RegisterWorker

/**
 * An executor's UCX parts, shared by its tasks: the node, the directory, the pool, serving (of
 * map outputs and of other buffers, such as merged chunks).
 */
private[spark] final class UcxRuntime private (env: SparkEnv, val node: UcxNode) {

  private[this] val registry = UcxRegistry.ref(env)

  val directory = new UcxDirectory(registry)

  /** Idle buffers kept: one hard in-flight limit per task slot. */
  val pool = new UcxBufferPool(
    node.register,
    node.deregister,
    maxIdleBytes = env.conf.get(REDUCER_MAX_SIZE_IN_FLIGHT) * 1024 * 1024 *
      math.max(1, env.conf.get(EXECUTOR_CORES)))

  val mapOutputs = new UcxMapOutputs(env.executorId, node, registry, directory)

  val remoteMemory = new UcxRemoteMemory(node)

  registry.askSync[Boolean](RegisterWorker(env.executorId, node.address))

  def stop(): Unit = {
    mapOutputs.stop()
    pool.close()
    node.stop()
  }
}

private[spark] object UcxRuntime extends Logging {

  /**
   * This executor's UCX runtime under `spark.shuffle.adaptive.transport` (`ucx` or `auto`), or
   * None where `auto` settles on Netty (logged with the reason). With `ucx`, a UCX that cannot
   * start is an error naming the reason.
   */
  def start(env: SparkEnv): Option[UcxRuntime] = {
    val conf = env.conf
    val mode = conf.get(TRANSPORT)
    def netty(why: String): Option[UcxRuntime] = {
      logInfo(s"${TRANSPORT.key}=$mode: reading other executors' blocks through Netty: $why")
      None
    }
    def fail(why: String): Nothing = throw new SparkException(
      s"${TRANSPORT.key}=ucx but $why. Install the UCX libraries (pip install " +
        s"'pyspark-shuffle[ucx]', then pyspark_shuffle.configure() sets ${UCX_LIBRARY_PATH.key}" +
        s") or set ${TRANSPORT.key} to 'auto' or 'netty'.")
    if (mode == Transport.Auto && conf.get(NETWORK_AUTH_ENABLED)) {
      netty("spark.authenticate is on and UCX's one-sided reads are not authenticated by Spark")
    } else {
      UcxLibrary.load(conf.get(UCX_LIBRARY_PATH)) match {
        case Left(why) => if (mode == Transport.Ucx) fail(why) else netty(why)
        case Right(_) =>
          val timeoutMs = conf
            .get(UCX_TIMEOUT)
            .getOrElse(TimeUnit.SECONDS.toMillis(conf.get(NETWORK_TIMEOUT)))
          try {
            val runtime = new UcxRuntime(env, new UcxNode(timeoutMs))
            logInfo(s"${TRANSPORT.key}=$mode: one-sided reads through UCX")
            Some(runtime)
          } catch {
            case e: Exception =>
              val why = s"UCX does not start: $e"
              if (mode == Transport.Ucx) fail(why) else netty(why)
          }
      }
    }
  }
}
