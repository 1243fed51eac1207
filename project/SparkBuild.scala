import sbt._

/** One line of jvm/spark-versions.txt: a Spark minor the wheel carries a plugin jar for. */
final case class SparkBuild(
    minor: String,
    spark: String,
    scala: String,
    jars: String,
    tests: String) {

  /** The sbt project's id, e.g. spark41. */
  def id: String = "spark" + minor.replace(".", "")
  def fromMaven: Boolean = jars == "maven"
  def fullTests: Boolean = tests == "full"
}

object SparkBuild {
  def read(file: File): Seq[SparkBuild] =
    IO.readLines(file).map(_.trim).filterNot(l => l.isEmpty || l.startsWith("#")).map { line =>
      line.split("\\s+") match {
        case Array(minor, spark, scala, jars @ ("maven" | "pypi"), tests @ ("full" | "reduced")) =>
          SparkBuild(minor, spark, scala, jars, tests)
        case _ =>
          sys.error(
            s"$file: cannot read '$line' (expected: minor spark scala maven|pypi full|reduced)")
      }
    }
}
