#!/usr/bin/env bash
# Spark needs a JVM: stop early with a clear message instead of a Py4J stack trace.
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "dbt-tablets needs Java 17 (Spark runs on the JVM), and no 'java' was found." >&2
  echo "Install a JDK, e.g. 'sudo apt-get install openjdk-17-jdk-headless' (Debian/Ubuntu)" >&2
  echo "or 'brew install openjdk@17' (macOS), then make sure 'java -version' works." >&2
  echo "(a JRE runs too; the JDK's javac also builds the rule that reads tablet tables natively in plain Spark SQL)" >&2
  exit 1
fi
