"""The verdict rule on its own: which named tests prove a change, what regresses, what caps it."""

from __future__ import annotations

from autocode.proof.results import Report, TestResult
from autocode.proof.verdict import Change, decide

P, F, E, S = "passed", "failed", "error", "skipped"
SRC = Change(test_files=frozenset({"tests/test_x.py"}), source_files=frozenset({"x.py"}),
             added_names=frozenset({"new_thing"}))


def rep(*items: tuple[str, str] | tuple[str, str, str | None] | tuple[str, str, str | None, str]) -> Report:
    return Report("pytest", tuple(TestResult(*item) for item in items))  # type: ignore[arg-type]


def test_a_changed_test_that_fails_in_the_probe_and_passes_now_is_a_proof() -> None:
    v = decide(candidate=rep(("tests/test_x.py::t", P, "tests/test_x.py")), base=rep(),
               probe=rep(("tests/test_x.py::t", F, "tests/test_x.py")), change=SRC)
    assert v.status == "verified" and v.proofs == ["tests/test_x.py::t"]


def test_a_changed_test_that_also_passes_in_the_probe_proves_nothing() -> None:
    v = decide(candidate=rep(("tests/test_x.py::t", P, "tests/test_x.py")), base=rep(),
               probe=rep(("tests/test_x.py::t", P, "tests/test_x.py")), change=SRC)
    assert v.status == "unproven" and not v.proofs


def test_a_skipped_probe_proves_nothing() -> None:
    v = decide(candidate=rep(("tests/test_x.py::t", P, "tests/test_x.py")), base=rep(),
               probe=rep(("tests/test_x.py::t", S, "tests/test_x.py")), change=SRC)
    assert v.status == "unproven"


def test_an_import_failure_counts_only_for_a_name_the_change_adds() -> None:
    cand = rep(("tests.test_x.T.test_new", P, "tests/test_x.py"), ("tests.test_x.T.test_old", P, "tests/test_x.py"))
    base = rep(("tests.test_x.T.test_old", P, "tests/test_x.py"))
    adds = rep(("test_x", E, None, "ImportError: cannot import name 'new_thing' from 'x'"))
    other = rep(("test_x", E, None, "SyntaxError: invalid syntax"))
    v = decide(candidate=cand, base=base, probe=adds, change=SRC)
    assert v.status == "verified" and v.proofs == ["tests.test_x.T.test_new"]  # test_old passed on the base
    assert decide(candidate=cand, base=base, probe=other, change=SRC).status == "unproven"


def test_a_test_the_change_left_alone_that_failed_on_the_base_is_a_proof() -> None:
    v = decide(candidate=rep(("tests/test_y.py::t", P, "tests/test_y.py")),
               base=rep(("tests/test_y.py::t", F, "tests/test_y.py")), probe=None, change=SRC)
    assert v.status == "verified" and v.proofs == ["tests/test_y.py::t"]


def test_a_test_that_passed_before_and_now_fails_skips_or_is_gone_is_a_regression() -> None:
    base = rep(("a", P), ("b", P), ("c", P), ("d", F))
    v = decide(candidate=rep(("a", F), ("b", S), ("d", P)), base=base, probe=None, change=SRC)
    assert v.status == "regressed"
    assert {(r["id"], r["now"]) for r in v.regressions} == {("a", "failed"), ("b", "skipped"), ("c", "missing")}


def test_a_failure_that_was_there_before_does_not_fail_the_change() -> None:
    v = decide(candidate=rep(("a", F), ("b", P)), base=rep(("a", F), ("b", F)), probe=None, change=SRC, exit_code=1)
    assert v.status == "verified" and v.proofs == ["b"] and v.already_failing == ["a"]


def test_weakening_and_blockers_cap_the_verdict() -> None:
    args = {"candidate": rep(("b", P)), "base": rep(("b", F)), "probe": None, "change": SRC}
    assert decide(**args).status == "verified"  # type: ignore[arg-type]
    weak = decide(**args, weakening=["tests/test_x.py: test_a was deleted"])  # type: ignore[arg-type]
    assert weak.status == "unproven" and weak.proofs == ["b"]
    blocked = decide(**args, blockers=["x resolves to the work tree"])  # type: ignore[arg-type]
    assert blocked.status == "unproven" and "work tree" in blocked.summary()


def test_no_per_test_output_is_unproven_when_green_and_failed_when_not() -> None:
    none = Report("make", None, "make test gives no per-test results")
    assert decide(candidate=none, base=None, probe=None, change=SRC, exit_code=0).status == "unproven"
    assert decide(candidate=none, base=None, probe=None, change=SRC, exit_code=2).status == "failed"
    assert decide(candidate=rep(("a", P)), base=None, probe=None, change=SRC, finished=False).status == "failed"


def test_an_old_failure_in_a_file_the_change_adds_a_test_to_is_not_the_changes() -> None:
    # The base already failed tests/test_x.py::old; the change adds ::new to the same file and fixes
    # the code ::new tests. The probe (the change's test file over the base source) fails both.
    cand = rep(("tests/test_x.py::old", F, "tests/test_x.py"), ("tests/test_x.py::new", P, "tests/test_x.py"))
    base = rep(("tests/test_x.py::old", F, "tests/test_x.py"))
    probe = rep(("tests/test_x.py::old", F, "tests/test_x.py"), ("tests/test_x.py::new", F, "tests/test_x.py"))
    v = decide(candidate=cand, base=base, probe=probe, change=SRC, exit_code=1)
    assert v.status == "verified" and v.proofs == ["tests/test_x.py::new"], v
    assert v.already_failing == ["tests/test_x.py::old"]
    # Where the probe did not show it failing without the change, the change owns the failure.
    passing_probe = rep(("tests/test_x.py::old", P, "tests/test_x.py"), ("tests/test_x.py::new", F, "tests/test_x.py"))
    v = decide(candidate=cand, base=base, probe=passing_probe, change=SRC, exit_code=1)
    assert v.status == "failed" and v.failing == ["tests/test_x.py::old"]
    assert v.summary().startswith("failed: tests/test_x.py::old fails with the change")
