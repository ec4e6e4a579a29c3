"""Per-test results of the project's own test command, and (verdict.py) what they prove.

The caller runs every program through `autocode.sandbox.run`; this package only rewrites
commands and reads what they left behind:

    from autocode.proof import frameworks
    inst = frameworks.instrument(argv, framework=detected, report_dir=dir, project=copy, cwd=cwd)
    if inst is None:                      # make test, a custom script: unproven
        reason = frameworks.why_not(argv, project=copy, cwd=cwd)
    else:
        out = sandbox.run(inst.argv, env=inst.env, cwd=inst.cwd, writable=[dir], ...)
        report = frameworks.read_report(inst, report_dir=dir, output=out.output, project=copy)
        shown = frameworks.shown_output(inst, out.output)   # what the person reads (go: not JSON)
    frameworks.progress(inst, report_dir=dir)   # while it runs: tests finished so far, or None
    only_changed = frameworks.narrow(argv, test_files=["tests/test_x.py"], project=copy, cwd=cwd)
    # -> the same command on those files only (instrument it too), or None: run everything

- `results.TestResult(id, outcome, file, message)`: outcome is passed | failed | error | skipped;
  `id` stable across runs and between base and candidate (see TestResult); `file` project-relative.
  A file or module that fails to load is one result with its path (or module) as id, "error".
- `results.Report(framework, results, reason)`: `results` None when the run left no per-test
  output (`reason` says why); never raises on a missing, huge or corrupt report.
- `frameworks.instrument(...) -> Instrumented | None` (`argv`, `env`, `framework`, `cwd`, `since`):
  `env["PYTHONPATH"]`, when present, goes first on any PYTHONPATH the caller sets, and
  `env["NODE_OPTIONS"]` is added to the caller's. The helpers it needs are copied into
  `report_dir`, which the program must see at the same path (pass it as `writable`).
  `framework` is the runner that writes results ("jest" for an `npm test` whose script runs jest).
  `report.reason` is also set, with results kept, when a run stopped before its end.
- Commands recognised after an `env A=B` prefix and `uv run` / `poetry run` / `pipenv run` /
  `pdm run` / `rye run` / `hatch run`; `npx`, `yarn`, `pnpm exec` before a JS runner.
- Frameworks: pytest (shipped plugin), unittest (shipped launcher), go test -json, node --test
  (shipped reporter), jest, vitest, mocha (JSON reporters), TAP (prove -v, tap), cargo test (its
  stable output), Maven/Gradle (surefire XML written during the run); npm/yarn/pnpm test when
  package.json's test script ends in one of those runners.

Imports nothing heavy; autocode.scrub is loaded only when a failure message is kept.
"""

from autocode.proof.results import Outcome, Report, TestResult

__all__ = ["Outcome", "Report", "TestResult"]
