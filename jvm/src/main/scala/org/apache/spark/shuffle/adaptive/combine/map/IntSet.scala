package org.apache.spark.shuffle.adaptive.combine.map

/** A set of ints, open addressing; 0 is held apart, as it marks an empty slot. */
private[combine] final class IntSet {
  private var slots = new Array[Int](1024)
  private var count = 0
  private var holdsZero = false

  def isEmpty: Boolean = count == 0 && !holdsZero

  def size: Int = count + (if (holdsZero) 1 else 0)

  def contains(v: Int): Boolean =
    if (v == 0) holdsZero
    else {
      val mask = slots.length - 1
      var i = spread(v) & mask
      while (slots(i) != 0 && slots(i) != v) i = (i + 1) & mask
      slots(i) == v
    }

  /** Adds `v`; whether it was not there. */
  def add(v: Int): Boolean =
    if (v == 0) {
      val added = !holdsZero
      holdsZero = true
      added
    } else {
      if (2 * (count + 1) > slots.length) grow()
      val mask = slots.length - 1
      var i = spread(v) & mask
      while (slots(i) != 0 && slots(i) != v) i = (i + 1) & mask
      slots(i) == 0 && {
        slots(i) = v
        count += 1
        true
      }
    }

  def copy(): IntSet = {
    val c = new IntSet
    c.slots = slots.clone()
    c.count = count
    c.holdsZero = holdsZero
    c
  }

  def foreach(f: Int => Unit): Unit = {
    if (holdsZero) f(0)
    slots.foreach(v => if (v != 0) f(v))
  }

  private def spread(v: Int): Int = Integer.rotateLeft(v * 0x9e3779b9, 16)

  private def grow(): Unit = {
    val old = slots
    slots = new Array[Int](2 * old.length)
    count = 0
    old.foreach(v => if (v != 0) add(v))
  }
}
