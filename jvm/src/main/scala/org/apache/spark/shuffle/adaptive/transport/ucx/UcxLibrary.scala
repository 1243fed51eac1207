package org.apache.spark.shuffle.adaptive.transport.ucx

import java.io.File

import scala.util.control.NonFatal

import org.openucx.jucx.NativeLibs

import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.UCX_LIBRARY_PATH

/**
 * Loads UCX and its Java binding once per JVM. The binding's JNI library links against UCX's
 * libraries by soname; loading those first by absolute path (from the pip wheel, say) satisfies
 * it without LD_LIBRARY_PATH, which a running JVM cannot change.
 */
private[ucx] object UcxLibrary {

  /** In link order: each links against those before it. */
  val Libraries: Seq[String] = Seq("libucm.so.0", "libucs.so.0", "libuct.so.0", "libucp.so.0")

  private[this] var outcome: Option[Either[String, Unit]] = None

  /** Right once UCX is loaded; Left with the reason it cannot be, the same on every call. */
  def load(dir: String): Either[String, Unit] = synchronized {
    if (outcome.isEmpty) outcome = Some(tryLoad(dir))
    outcome.get
  }

  private def tryLoad(dir: String): Either[String, Unit] = {
    val missing = if (dir.isEmpty) Nil else Libraries.map(new File(dir, _)).filterNot(_.isFile)
    if (missing.nonEmpty) {
      Left(s"${missing.mkString(", ")} not found (${UCX_LIBRARY_PATH.key}=$dir)")
    } else {
      try {
        if (dir.nonEmpty) Libraries.foreach(lib => System.load(new File(dir, lib).getAbsolutePath))
        NativeLibs.load()
        Right(())
      } catch {
        case e: LinkageError =>
          Left(
            s"the UCX libraries do not load: ${e.getMessage}" +
              (if (dir.isEmpty) s" (set ${UCX_LIBRARY_PATH.key}, see README)" else ""))
        case NonFatal(e) => Left(s"the UCX Java binding does not load: $e")
      }
    }
  }
}
