package org.apache.spark.shuffle.adaptive.push.reduce

/**
 * The mark of an RDD whose shuffle's reduce tasks run at their partitions' owners (the plugin's
 * SQL exchange marks its rows), found by [[org.apache.spark.shuffle.adaptive.lineage.RddMarks]]:
 * a block pushed to its owner then crosses the network once, as in sort's shuffle, so the
 * shuffle pushes larger blocks (push.maxBlockSize).
 */
private[spark] trait ReducedAtOwners
