package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.shuffle.BlockingShuffleManager

/**
 * A shuffle manager whose executors serve map-output blocks through its `shuffleBlockResolver`.
 * Spark 4.3 moved that resolver from ShuffleManager to BlockingShuffleManager (the managers
 * whose reduce stage starts after the map stage, as Spark's sort shuffle and this plugin's).
 */
private[spark] trait ServingShuffleManager extends BlockingShuffleManager
