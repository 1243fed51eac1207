// The Spark version is pinned once, in pyproject.toml (`pyspark==X.Y.Z`); the jar is built against it.
val sparkVersion = """"pyspark==([0-9.]+)"""".r
  .findFirstMatchIn(IO.read(file("pyproject.toml")))
  .getOrElse(sys.error("pyproject.toml must pin pyspark==X.Y.Z"))
  .group(1)
val sparkMinor = sparkVersion.split('.').take(2).mkString(".")
val scalatestVersion = "3.2.19"
// UCX's Java binding; UCX itself comes from PyPI (libucx-cu11, the same version), see README.
val jucxVersion = "1.18.1"

// Jars the plugin needs at run time beside its own; `make jar` ships them in the wheel.
lazy val bundledJars = taskKey[Seq[File]]("Copies the plugin's run-time dependencies to jvm/target/bundled")

// Spark's own test JVM flags (spark-parent pom, extraJavaTestArgs) for Java 17.
val sparkJavaTestArgs = Seq(
  "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio",
  "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref",
  "sun.nio.ch", "sun.nio.cs", "sun.security.action", "sun.util.calendar"
).map(p => s"--add-opens=java.base/$p=ALL-UNNAMED") ++ Seq(
  "-Djdk.reflect.useDirectMethodHandle=false", "-Dio.netty.tryReflectionSetAccessible=true")

// One project; its sources live under jvm/ so that the repository root stays readable.
lazy val root = (project in file("."))
  .settings(
    Compile / sourceDirectory := baseDirectory.value / "jvm/src/main",
    Test / sourceDirectory := baseDirectory.value / "jvm/src/test",
    target := baseDirectory.value / "jvm/target",
    name := s"pyspark-shuffle-spark$sparkMinor",
    moduleName := name.value,
    organization := "io.github.pyspark-shuffle",
    version := "0.1.0",
    scalaVersion := "2.13.17",
    javacOptions ++= Seq("--release", "17"),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Xfatal-warnings"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-core" % sparkVersion % Provided,
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.openucx" % "jucx" % jucxVersion,
      "org.apache.spark" %% "spark-core" % sparkVersion % Test classifier "tests",
      "org.scalatest" %% "scalatest" % scalatestVersion % Test
    ),
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "pyspark-shuffle-build.properties"
      IO.write(out, s"spark.version=$sparkVersion\nscala.version=${scalaVersion.value}\n" +
        s"version=${version.value}\n")
      Seq(out)
    }.taskValue,
    bundledJars := {
      val out = target.value / "bundled"
      IO.delete(out)
      (Compile / dependencyClasspath).value.map(_.data)
        .filter(_.getName.startsWith("jucx-"))
        .map { jar => IO.copyFile(jar, out / jar.getName); out / jar.getName }
    },
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= sparkJavaTestArgs ++ Seq(
      "-Xmx3g", "-Xss4m", "-Dspark.testing=1", "-Dspark.ui.enabled=false",
      "-Dspark.ui.showConsoleProgress=false", "-Dspark.unsafe.exceptionOnMemoryLeak=true",
      s"-Dspark.test.home=${sys.env.getOrElse("SPARK_HOME", "")}",
      // The UCX libraries of the pip wheel, for the UCX suites (they cancel without them).
      s"-Dspark.shuffle.adaptive.ucx.libraryPath=${sys.env.getOrElse("UCX_LIBRARY_PATH", "")}",
      s"-Djava.io.tmpdir=${(target.value / "tmp").getAbsolutePath}",
      s"-Dlog4j.configurationFile=file:${(baseDirectory.value / "jvm/src/test/resources/log4j2.properties").getAbsolutePath}"),
    Test / envVars := Map("SPARK_TESTING" -> "1", "SPARK_SCALA_VERSION" -> "2.13"),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    Test / testOptions += Tests.Setup(() => IO.createDirectory(target.value / "tmp"))
  )
