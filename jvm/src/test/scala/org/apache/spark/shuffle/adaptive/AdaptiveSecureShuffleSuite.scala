package org.apache.spark.shuffle.adaptive

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.ShuffleSuite
import org.apache.spark.internal.config.{AUTH_SECRET, IO_ENCRYPTION_ENABLED, NETWORK_AUTH_ENABLED, SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, SHUFFLE_MANAGER}

/**
 * Apache Spark's `ShuffleSuite` with `spark.authenticate`, `spark.io.encryption.enabled` and
 * host-local reads on: shuffle files are written encrypted, fetched over authenticated
 * connections, and read from the files of the other local-cluster executor
 * ([[transport.HostLocalTransport]], which Spark turns off on local-cluster unless set), decrypted
 * by the reader.
 */
class AdaptiveSecureShuffleSuite
    extends ShuffleSuite
    with BeforeAndAfterAll
    with ShuffleSuiteLogsCheck {

  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    conf.set(NETWORK_AUTH_ENABLED, true)
    conf.set(AUTH_SECRET, "pyspark-shuffle-test-secret")
    conf.set(IO_ENCRYPTION_ENABLED, true)
    conf.set(SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, true)
  }
}
