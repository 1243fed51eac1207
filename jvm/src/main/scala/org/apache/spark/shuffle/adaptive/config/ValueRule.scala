package org.apache.spark.shuffle.adaptive.config

/**
 * The values one key accepts, declared once with the key (see [[AdaptiveShuffleConf]]): the JVM
 * checks with [[accepts]], and `pyspark_shuffle/conf_keys.json`, generated from the entries,
 * carries [[kind]] and [[bounds]] to Python, which checks the same rule before a JVM starts.
 * [[allowed]] words it for the errors of both sides.
 */
private[config] sealed trait ValueRule[T] {
  def accepts(value: T): Boolean
  def allowed: String

  /** The rule's name in `conf_keys.json`; Python has one normaliser per kind. */
  def kind: String

  /** The rule's parameters in `conf_keys.json`. */
  def bounds: Map[String, Any] = Map.empty
}

private[config] object ValueRule {

  /** A size in bytes within `[min, max]`. */
  final case class Size(min: Long, max: Long) extends ValueRule[Long] {
    def accepts(value: Long): Boolean = value >= min && value <= max
    def kind: String = "size"
    override def bounds: Map[String, Any] = Map("min" -> min, "max" -> max)
    def allowed: String = (min, max) match {
      case (0, Long.MaxValue) => "a size >= 0"
      case (1, Long.MaxValue) => "a positive size"
      case (1, Int.MaxValue) => s"a positive size of at most 2g - 1 byte (${Int.MaxValue} bytes)"
      case _ => s"a size between $min and $max bytes"
    }
  }

  /** A finite number within `[min, max]`. */
  final case class Number(min: Double, max: Double) extends ValueRule[Double] {
    def accepts(value: Double): Boolean = !value.isInfinite && value >= min && value <= max
    def kind: String = "number"
    override def bounds: Map[String, Any] =
      Map("min" -> min) ++ (if (max.isInfinite) Map.empty else Map("max" -> max))
    def allowed: String =
      if (max.isInfinite) s"a finite number >= ${fmt(min)}"
      else s"a number between ${fmt(min)} and ${fmt(max)}"
  }

  /** A whole number within `[min, max]`. */
  final case class Whole(min: Int, max: Int) extends ValueRule[Int] {
    def accepts(value: Int): Boolean = value >= min && value <= max
    def kind: String = "whole"
    override def bounds: Map[String, Any] = Map("min" -> min, "max" -> max)
    def allowed: String = s"a whole number between $min and $max"
  }

  /** One of `values`, compared in lower case (the entries transform values to lower case). */
  final case class Choice(values: Seq[String]) extends ValueRule[String] {
    def accepts(value: String): Boolean = values.contains(value)
    def kind: String = "choice"
    override def bounds: Map[String, Any] = Map("values" -> values)
    def allowed: String = "one of " + values.map(v => s"'$v'").mkString(", ")
  }

  object Bool extends ValueRule[Boolean] {
    def accepts(value: Boolean): Boolean = true
    def kind: String = "boolean"
    def allowed: String = "True or False"
  }

  /** A positive duration, in milliseconds once parsed. */
  object Duration extends ValueRule[Long] {
    def accepts(value: Long): Boolean = value > 0
    def kind: String = "duration"
    def allowed: String =
      "a positive duration: an int number of ms or a string like '500ms', '30s', '2min'"
  }

  /** A directory, or '' for none. */
  object Directory extends ValueRule[String] {
    def accepts(value: String): Boolean = true
    def kind: String = "directory"
    def allowed: String = "a directory, or ''"
  }

  private def fmt(v: Double): String = if (v == math.rint(v)) v.toLong.toString else v.toString
}
