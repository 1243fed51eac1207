// One plugin jar per Spark minor, each compiled against that minor's API: the minors, their
// Spark and Scala versions and where their jars come from are the lines of
// jvm/spark-versions.txt (project/SparkBuild.scala reads them).
val sparkBuilds = SparkBuild.read(file("jvm/spark-versions.txt"))
val scalatestVersion = "3.2.19"
// UCX's Java binding; UCX itself comes from PyPI (libucx-cu11, the same version), see README.
val jucxVersion = "1.18.1"
// async-profiler for metrics/StageProfiler; pyspark_shuffle/_profiler.py fetches the same version.
val asyncProfilerVersion = "4.6"

// Jars the plugin needs at run time beside its own; `make jar` ships them in the wheel.
lazy val bundledJars =
  taskKey[Seq[File]]("Copies the plugin's run-time dependencies to jvm/target/bundled")

// The fault injection tests and benchmarks use (jvm/src/testkit: a slow node on one machine),
// in a jar of its own beside the plugin's, which holds none of it.
lazy val testkitJar = taskKey[File]("Packages jvm/src/testkit's classes as the testkit jar")
val TestkitPackage = "org/apache/spark/shuffle/adaptive/testing/"

// Spark's own test JVM flags (spark-parent pom, extraJavaTestArgs) for Java 17.
val sparkJavaTestArgs = Seq(
  "java.lang",
  "java.lang.invoke",
  "java.lang.reflect",
  "java.io",
  "java.net",
  "java.nio",
  "java.util",
  "java.util.concurrent",
  "java.util.concurrent.atomic",
  "jdk.internal.ref",
  "sun.nio.ch",
  "sun.nio.cs",
  "sun.security.action",
  "sun.util.calendar").map(p => s"--add-opens=java.base/$p=ALL-UNNAMED") ++ Seq(
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true")

def sparkProject(minor: String): Project = {
  val build = sparkBuilds
    .find(_.minor == minor)
    .getOrElse(sys.error(s"jvm/spark-versions.txt has no line for Spark $minor"))
  val root = file(".").getAbsoluteFile
  val src = root / "jvm/src"
  Project(build.id, root / "jvm/target/projects" / build.id).settings(
    name := s"pyspark-shuffle-spark$minor",
    moduleName := name.value,
    organization := "io.github.pyspark-shuffle",
    version := "0.1.0",
    scalaVersion := build.scala,
    target := root / "jvm/target" / s"spark-$minor",
    javacOptions ++= Seq("--release", "17"),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Xfatal-warnings"),
    // The shuffle manager's own code, DummyRDD (part of the Python API, in the plugin jar) and
    // the testkit (a jar of its own, see testkitJar), each in a source tree of its own.
    Compile / unmanagedSourceDirectories := Seq(
      src / "main/scala",
      src / "dummy/scala",
      src / "testkit/scala") ++ SparkCompat.sources(src, minor),
    Compile / packageBin / mappings ~= (_.filterNot(_._2.startsWith(TestkitPackage))),
    testkitJar := {
      val classes = (Compile / classDirectory).value
      val _ = (Compile / compile).value
      val out = target.value / s"scala-${scalaBinaryVersion.value}" /
        s"pyspark-shuffle-testkit-spark${minor}_${scalaBinaryVersion.value}-${version.value}.jar"
      val files = (classes ** "*").get.filter(_.isFile).flatMap { f =>
        IO.relativize(classes, f).filter(_.startsWith(TestkitPackage)).map(f -> _)
      }
      IO.jar(files, out, new java.util.jar.Manifest, None)
      out
    },
    Compile / unmanagedResourceDirectories := Nil,
    libraryDependencies += "org.openucx" % "jucx" % jucxVersion,
    // metrics/StageProfiler's sampler: on the class path where profiles are asked for, never bundled.
    libraryDependencies += "tools.profiler" % "async-profiler" % asyncProfilerVersion % Provided,
    libraryDependencies ++= (if (build.fromMaven)
                               Seq(
                                 "org.apache.spark" %% "spark-core" % build.spark % Provided,
                                 "org.apache.spark" %% "spark-sql" % build.spark % Provided)
                             else Nil),
    // Releases Maven Central lacks: the jars of the pyspark sdist (`build/spark-jars`, run by make).
    Compile / unmanagedJars ++= (if (build.fromMaven) Nil
                                 else {
                                   val jars = root / "jvm/target/spark-jars" / build.spark
                                   if (!(jars / ".complete").exists)
                                     sys.error(
                                       s"$jars is missing: run build/spark-jars ${build.spark} $jars")
                                   (jars * "*.jar").classpath
                                 }),
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "pyspark-shuffle-build.properties"
      IO.write(
        out,
        s"spark.version=${build.spark}\nscala.version=${scalaVersion.value}\n" +
          s"version=${version.value}\n")
      Seq(out)
    }.taskValue,
    bundledJars := {
      val out = root / "jvm/target/bundled"
      IO.delete(out)
      (Compile / dependencyClasspath).value
        .map(_.data)
        .filter(_.getName.startsWith("jucx-"))
        .map { jar => IO.copyFile(jar, out / jar.getName); out / jar.getName }
    },
    // The full minor runs every suite; the others Spark's ShuffleSuite (from spark-core's tests
    // jar, which only Maven Central has) against the plugin; pypi minors no JVM suite.
    Test / unmanagedSourceDirectories := (if (build.fullTests) Seq(src / "test/scala") else Nil),
    Test / unmanagedSources ++= (if (build.fullTests || !build.fromMaven) Nil
                                 else
                                   Seq(
                                     src / "test/scala/org/apache/spark/shuffle/adaptive/AdaptiveShuffleSuite.scala",
                                     src / "test/scala/org/apache/spark/shuffle/adaptive/SparkLogs.scala")),
    Test / unmanagedResourceDirectories := Seq(src / "test/resources"),
    libraryDependencies ++= (if (build.fromMaven)
                               Seq(
                                 "org.apache.spark" %% "spark-core" % build.spark % Test classifier "tests",
                                 "org.scalatest" %% "scalatest" % scalatestVersion % Test)
                             else Nil),
    Test / fork := true,
    Test / baseDirectory := root,
    Test / parallelExecution := false,
    Test / javaOptions ++= sparkJavaTestArgs ++ Seq(
      "-Xmx3g",
      "-Xss4m",
      // One JVM runs every suite, each compiling its own generated code; with C1 alone (`make
      // test`'s options) the code cache defaults to 48 MiB, which fills and fails the tasks that
      // run after it.
      "-XX:ReservedCodeCacheSize=256m",
      "-Dspark.testing=1",
      "-Dspark.ui.enabled=false",
      "-Dspark.ui.showConsoleProgress=false",
      "-Dspark.unsafe.exceptionOnMemoryLeak=true",
      // local-cluster executors start from this minor's pip-installed pyspark.
      s"-Dspark.test.home=${sys.env.getOrElse(s"SPARK_HOME_${minor.replace('.', '_')}", sys.env.getOrElse("SPARK_HOME", ""))}",
      // The UCX libraries of the pip wheel, for the UCX suites (they cancel without them).
      s"-Dspark.shuffle.adaptive.ucx.libraryPath=${sys.env.getOrElse("UCX_LIBRARY_PATH", "")}",
      s"-Djava.io.tmpdir=${(target.value / "tmp").getAbsolutePath}",
      s"-Dlog4j.configurationFile=file:${(src / "test/resources/log4j2.properties").getAbsolutePath}"),
    Test / envVars := Map(
      "SPARK_TESTING" -> "1",
      "SPARK_SCALA_VERSION" -> "2.13",
      // `make test`'s options for test JVMs (see Makefile): the java launcher of the forked JVM
      // and of every executor it starts reads them.
      "JDK_JAVA_OPTIONS" -> sys.env.getOrElse("TEST_JAVA_OPTIONS", "")),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    Test / testOptions += Tests.Setup(() => IO.createDirectory(target.value / "tmp")))
}

lazy val spark40 = sparkProject("4.0")
lazy val spark41 = sparkProject("4.1")
lazy val spark42 = sparkProject("4.2")
lazy val spark43 = sparkProject("4.3")

lazy val root = (project in file("."))
  .aggregate(spark40, spark41, spark42, spark43)
  .settings(
    publish / skip := true,
    target := baseDirectory.value / "jvm/target/root",
    // The scalafmt settings apply to every project; root has no sources of its own.
    Compile / unmanagedSourceDirectories := Nil,
    Test / unmanagedSourceDirectories := Nil)
