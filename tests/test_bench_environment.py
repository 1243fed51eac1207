from pyspark_shuffle.bench import environment


def test_java_version_skips_the_launchers_notes(monkeypatch):
    printed = (
        "NOTE: Picked up JDK_JAVA_OPTIONS: -XX:TieredStopAtLevel=1\n"
        'openjdk version "17.0.16" 2025-07-15\nOpenJDK Runtime Environment (build 17.0.16+8)'
    )
    monkeypatch.setattr(environment, "_run", lambda command, cwd=None: printed)
    monkeypatch.setenv("JAVA_HOME", "/opt/jdk")
    assert environment.java_version() == 'openjdk version "17.0.16" 2025-07-15'


def test_java_version_without_output(monkeypatch):
    monkeypatch.setattr(environment, "_run", lambda command, cwd=None: None)
    monkeypatch.setenv("JAVA_HOME", "/opt/jdk")
    assert environment.java_version() is None
