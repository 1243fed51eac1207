package org.apache.spark.shuffle.adaptive

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import org.apache.spark.shuffle.adaptive.config.{AdaptiveShuffleConf, ConfigurationDocSuite}
import org.apache.spark.shuffle.adaptive.metrics.MetricsDocSuite

/**
 * The files generated from the JVM's declarations (the configuration keys, the counters): what
 * `make docs` writes (`main`, from the repository root), and what their suites find out of date.
 */
object GeneratedDocs {

  val HowToRegenerate = "Regenerate it from the repository root with: make docs"

  private def files: Seq[(Path, String)] = Seq(
    ConfigurationDocSuite.DocFile -> ConfigurationDocSuite.render(AdaptiveShuffleConf.entries),
    ConfigurationDocSuite.KeysFile -> ConfigurationDocSuite.renderKeys(AdaptiveShuffleConf.entries),
    MetricsDocSuite.DocFile -> MetricsDocSuite.render(),
    MetricsDocSuite.NamesFile -> MetricsDocSuite.renderNames())

  /** Why `file` is not `expected`, if it is not. */
  def drift(file: Path, expected: String): Option[String] = {
    val actual =
      if (Files.isRegularFile(file)) Some(new String(Files.readAllBytes(file), UTF_8)) else None
    actual match {
      case None => Some(s"${file.toAbsolutePath} is missing. $HowToRegenerate")
      case Some(found) if found != expected =>
        Some(
          s"$file is out of date. $HowToRegenerate\n--- expected ---\n$expected--- found ---\n$found")
      case _ => None
    }
  }

  def main(args: Array[String]): Unit = files.foreach { case (file, text) =>
    if (drift(file, text).isDefined) {
      Files.createDirectories(file.toAbsolutePath.getParent)
      Files.write(file, text.getBytes(UTF_8))
      println(s"wrote $file")
    }
  }
}
