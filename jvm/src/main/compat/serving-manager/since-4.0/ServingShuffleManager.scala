package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.shuffle.ShuffleManager

/**
 * A shuffle manager whose executors serve map-output blocks through its `shuffleBlockResolver`.
 * Up to Spark 4.2 every ShuffleManager declares that resolver.
 */
private[spark] trait ServingShuffleManager extends ShuffleManager
