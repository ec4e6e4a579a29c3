"""Per-test results of node --test, go test, cargo test and prove, run for real where the
tool is installed (each test says which tool it needs and is skipped without it)."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest

from support.proof import instrumented, outcomes, run, write


def needs(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed here (scripts install it for CI)")


NODE_PROJECT = {
    "test/a.test.js": """
        const test = require('node:test');
        const assert = require('node:assert');
        test.describe('suite one', () => {
          test.it('passes', () => { assert.strictEqual(1, 1); });
          test.it('fails', () => { assert.strictEqual(1, 2); });
          test.describe('inner', () => { test.it('deep ünï', () => {}); });
          test.it('skipped', { skip: 'no reason' }, () => {});
          test.it('todo one', { todo: true }, () => {});
        });
        test('top level', () => {});
        test('with\\nnewline', () => {});
    """,
    "test/broken.test.js": "require('./does-not-exist');\n",
}


def test_node_test_ids_outcomes_and_output(tmp_path: Path) -> None:
    needs("node")
    project = write(tmp_path / "p", NODE_PROJECT)
    argv = ["node", "--test"]
    plain = run(argv, project)
    report, outcome, inst = instrumented(argv, project, tmp_path / "r")
    assert outcomes(report) == {
        "test/a.test.js::suite one > passes": "passed",
        "test/a.test.js::suite one > fails": "failed",
        "test/a.test.js::suite one > inner > deep ünï": "passed",
        "test/a.test.js::suite one > skipped": "skipped",
        "test/a.test.js::suite one > todo one": "skipped",
        "test/a.test.js::top level": "passed",
        "test/a.test.js::with\\nnewline": "passed",
        "test/broken.test.js": "error",
    }
    assert report.by_id()["test/a.test.js::suite one > fails"].file == "test/a.test.js"
    assert "1 !== 2" in (report.by_id()["test/a.test.js::suite one > fails"].message or "")
    assert outcome.exit_code == plain.exit_code == 1
    assert "✖ fails" in outcome.output and "▶ suite one" in outcome.output  # the spec reporter still prints
    assert inst.framework == "node"


def test_npm_test_running_node_test_reads_the_script(tmp_path: Path) -> None:
    needs("npm")
    project = write(tmp_path / "p", {**NODE_PROJECT, "package.json": '{"scripts": {"test": "node --test"}}'})
    report, outcome, inst = instrumented(["npm", "test"], project, tmp_path / "r")
    assert inst.framework == "node" and inst.argv[:3] == ["npm", "test", "--"]
    assert outcome.exit_code == 1
    assert outcomes(report)["test/a.test.js::suite one > passes"] == "passed"
    assert outcomes(report)["test/broken.test.js"] == "error"


def test_npm_test_running_node_test_on_a_folder_uses_node_options(tmp_path: Path) -> None:
    needs("npm")
    project = write(tmp_path / "my p", {**NODE_PROJECT, "package.json": '{"scripts": {"test": "node --test test/"}}'})
    plain = run(["npm", "test"], project)
    report, outcome, inst = instrumented(["npm", "test"], project, tmp_path / "report dir")
    assert inst.argv == ["npm", "test"] and "--test-reporter=spec" in inst.env["NODE_OPTIONS"]
    assert outcome.exit_code == plain.exit_code == 1
    assert outcomes(report)["test/a.test.js::suite one > inner > deep ünï"] == "passed"
    assert outcomes(report)["test/broken.test.js"] == "error"


GO_PROJECT = {
    "go.mod": "module example.com/demo\n\ngo 1.19\n",
    "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    "calc/calc_test.go": """
        package calc

        import "testing"

        func TestAdd(t *testing.T) {
        \tif Add(2, 3) != 5 {
        \t\tt.Fatal("bad")
        \t}
        }

        func TestBroken(t *testing.T) { t.Fatalf("expected %d", -1) }

        func TestSkip(t *testing.T) { t.Skip("later") }

        func TestTable(t *testing.T) {
        \tt.Run("one", func(t *testing.T) {})
        \tt.Run("two", func(t *testing.T) { t.Fail() })
        }
    """,
    "nobuild/x.go": "package nobuild\n",
    "nobuild/x_test.go": "package nobuild\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { undefined() }\n",
}


def test_go_test_json_events(tmp_path: Path) -> None:
    needs("go")
    project = write(tmp_path / "p", GO_PROJECT)
    env = {"HOME": str(tmp_path), "GOCACHE": str(tmp_path / "gocache"), "GOFLAGS": "-mod=mod", "GOPROXY": "off"}
    argv = ["go", "test", "./..."]
    plain = run(argv, project, env=env)
    report, outcome, inst = instrumented(argv, project, tmp_path / "r", env=env)
    assert outcomes(report) == {
        "example.com/demo/calc::TestAdd": "passed",
        "example.com/demo/calc::TestBroken": "failed",
        "example.com/demo/calc::TestSkip": "skipped",
        "example.com/demo/calc::TestTable": "failed",
        "example.com/demo/calc::TestTable/one": "passed",
        "example.com/demo/calc::TestTable/two": "failed",
        "example.com/demo/nobuild": "error",
    }
    assert report.by_id()["example.com/demo/calc::TestTable/two"].file == "calc/calc_test.go"
    assert "expected -1" in (report.by_id()["example.com/demo/calc::TestBroken"].message or "")
    assert outcome.exit_code == plain.exit_code == 2  # go's code when a package does not build
    from autocode.proof import frameworks

    shown = frameworks.shown_output(inst, outcome.output)
    assert "--- FAIL: TestBroken" in shown and '"Action"' not in shown


CARGO_PROJECT = {
    "Cargo.toml": '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/lib.rs": """
        pub mod calc;

        /// ```
        /// assert_eq!(demo::add(2, 3), 5);
        /// ```
        pub fn add(a: i32, b: i32) -> i32 { a + b }

        #[cfg(test)]
        mod tests {
            #[test]
            fn it_adds() { assert_eq!(super::add(2, 3), 5); }
            #[test]
            fn it_breaks() { assert_eq!(super::add(2, 3), -1, "wanted the bug"); }
            #[test]
            #[ignore]
            fn it_waits() {}
        }
    """,
    "src/calc.rs": "#[cfg(test)]\nmod tests {\n    #[test]\n    fn inner_ok() {}\n}\n",
    "tests/integration.rs": "#[test]\nfn from_outside() { assert_eq!(demo::add(1, 1), 2); }\n",
}


def test_cargo_test_output(tmp_path: Path) -> None:
    needs("cargo")
    project = write(tmp_path / "p", CARGO_PROJECT)
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)  # the tests' own HOME is a temporary folder
    env = {"HOME": str(tmp_path), "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(real_home / ".rustup")),
           "CARGO_HOME": os.environ.get("CARGO_HOME", str(real_home / ".cargo")),
           "CARGO_TARGET_DIR": str(tmp_path / "target"), "CARGO_NET_OFFLINE": "true"}
    if run(["cargo", "--version"], tmp_path, env=env).exit_code != 0:
        pytest.skip("cargo is installed but has no usable toolchain here")
    argv = ["cargo", "test", "--no-fail-fast"]
    report, outcome, _ = instrumented(argv, project, tmp_path / "r", env=env)
    assert report.results is not None, outcome.output
    assert outcomes(report) == {
        "src/lib.rs::tests::it_adds": "passed",
        "src/lib.rs::tests::it_breaks": "failed",
        "src/lib.rs::tests::it_waits": "skipped",
        "src/lib.rs::calc::tests::inner_ok": "passed",
        "tests/integration.rs::from_outside": "passed",
        "doc::src/lib.rs - add (line 4)": "passed",
    }, outcome.output
    by_id = report.by_id()
    assert by_id["src/lib.rs::calc::tests::inner_ok"].file == "src/calc.rs"
    assert by_id["tests/integration.rs::from_outside"].file == "tests/integration.rs"
    assert "wanted the bug" in (by_id["src/lib.rs::tests::it_breaks"].message or "")
    assert outcome.exit_code == 101


PERL_PROJECT = {
    "t/basic.t": """
        use strict; use warnings; use Test::More tests => 5;
        ok(1, 'first passes');
        ok(0, 'second fails');
        SKIP: { skip "no network", 1; ok(1, 'skipped one'); }
        TODO: { local $TODO = "later"; ok(0, 'todo fails'); }
        ok(1, "second passes");
    """,
    "t/broken.t": "use strict; use Nonexistent::Module; use Test::More tests => 1; ok(1);\n",
}


def test_prove_tap(tmp_path: Path) -> None:
    needs("prove")
    project = write(tmp_path / "p", PERL_PROJECT)
    argv = ["prove", "t/"]
    plain = run(argv, project)
    report, outcome, inst = instrumented(argv, project, tmp_path / "r")
    assert inst.argv == ["prove", "-v", "t/"]
    assert outcomes(report) == {
        "t/basic.t::first passes": "passed",
        "t/basic.t::second fails": "failed",
        "t/basic.t::#3": "skipped",
        "t/basic.t::todo fails": "skipped",
        "t/basic.t::second passes": "passed",
        "t/broken.t": "error",
    }
    assert report.by_id()["t/basic.t::first passes"].file == "t/basic.t"
    assert outcome.exit_code == plain.exit_code == 1
    assert "Result: FAIL" in outcome.output



MAVEN_PROJECT = {
    "pom.xml": """
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>com.example</groupId><artifactId>demo</artifactId><version>1.0</version>
          <properties><maven.compiler.release>17</maven.compiler.release>
            <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
          <dependencies><dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter-engine</artifactId>
            <version>5.10.2</version><scope>test</scope></dependency></dependencies>
          <build><plugins>
            <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
            <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.11.0</version></plugin>
            <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
          </plugins></build>
        </project>
    """,
    "src/main/java/com/example/Calc.java": "package com.example;\npublic class Calc { public static int add(int a, int b) { return a + b; } }\n",
    "src/test/java/com/example/CalcTest.java": """
        package com.example;
        import org.junit.jupiter.api.Test;
        import org.junit.jupiter.api.Disabled;
        import static org.junit.jupiter.api.Assertions.*;
        public class CalcTest {
          @Test public void adds() { assertEquals(5, Calc.add(2, 3)); }
          @Test public void breaks() { assertEquals(-1, Calc.add(2, 3)); }
          @Test public void explodes() { throw new IllegalStateException("boom"); }
          @Disabled("later") @Test public void waits() {}
        }
    """,
}


def test_maven_surefire_reports_of_a_real_offline_build(tmp_path: Path) -> None:
    needs("mvn")
    project = write(tmp_path / "p", MAVEN_PROJECT)
    repository = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".m2" / "repository"
    argv = ["mvn", "-o", "-q", f"-Dmaven.repo.local={repository}", "test"]
    report, outcome, _ = instrumented(argv, project, tmp_path / "r", env={"HOME": str(tmp_path)})
    if "in offline mode" in outcome.output:
        pytest.skip("the local Maven repository lacks the pinned plugins (an offline build cannot fetch them)")
    assert outcomes(report) == {
        "com.example.CalcTest#adds": "passed",
        "com.example.CalcTest#breaks": "failed",
        "com.example.CalcTest#explodes": "error",
        "com.example.CalcTest#waits": "skipped",
    }, outcome.output
    assert {r.file for r in report.results or ()} == {"src/test/java/com/example/CalcTest.java"}
    assert outcome.exit_code == 1
