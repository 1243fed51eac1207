import sbt._

/**
 * Picks the version-specific sources of a Spark minor: each directory under
 * jvm/src/main/compat/ holds one difference between Spark minors, as one source file in each of
 * its `since-X.Y` directories; a minor compiles the one of the newest `since-X.Y` not after it.
 */
object SparkCompat {
  private val Since = """since-(\d+)\.(\d+)""".r

  private def version(text: String): (Int, Int) = text.split('.') match {
    case Array(major, minor) => (major.toInt, minor.toInt)
    case _ => sys.error(s"not a Spark minor: $text")
  }

  private val order = Ordering[(Int, Int)]

  def sources(src: File, minor: String): Seq[File] = {
    val wanted = version(minor)
    val differences =
      (src / "main/compat").listFiles().toSeq.filter(_.isDirectory).sortBy(_.getName)
    differences.map { difference =>
      val variants = difference.listFiles().toSeq.collect {
        case dir @ (d: File) if d.isDirectory && Since.pattern.matcher(d.getName).matches =>
          val Since(major, minorOf) = dir.getName
          (major.toInt, minorOf.toInt) -> dir
      }
      variants
        .filter(v => order.lteq(v._1, wanted))
        .sortBy(_._1)(order)
        .lastOption
        .map(_._2)
        .getOrElse(sys.error(s"$difference has no since-X.Y directory for Spark $minor"))
    }
  }
}
