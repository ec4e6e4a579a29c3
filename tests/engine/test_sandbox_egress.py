"""An engine's network: its sandbox keeps its own network namespace and reaches exactly its
endpoint through AutoCode's allow-list proxy (sandbox/egress.py, sandbox/relay.py).

Real bubblewrap, a real scripted endpoint on the host's 127.0.0.1, a real listener on another
port and on every address: a probe inside the sandbox (`support.egress_probe`) tries each way
out, as `sandbox.run` runs an engine (the same policy and `egress_to`). The endpoint answers
through the forwarder, the proxy and a CONNECT tunnel; everything else fails, nothing reaches
the other listeners, and each refusal the proxy saw is recorded.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from autocode import sandbox
from autocode.sandbox import egress
from support.egress_probe import outside_address, probe_source, reachable, results_in
from support.engine_model import Fix, serve
from support.sandbox import listener

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="bubblewrap cannot make a sandbox here")


def _run(tmp_path: Path, argv: list[str], url: str, refused: list[dict[str, Any]],
         policy: sandbox.Policy | None = None) -> sandbox.Outcome:
    workspace = tmp_path / "work"
    copy = tmp_path / "copy"
    workspace.mkdir(exist_ok=True)
    copy.mkdir(exist_ok=True)
    lock = threading.Lock()

    def record(attempt: dict[str, Any]) -> None:
        with lock:
            refused.append(attempt)

    return sandbox.run(argv, copy=copy, workspace=workspace, cwd=copy, timeout=120, cancelled=lambda: False,
                       policy=policy, egress_to=sandbox.Egress(url, record))


def test_only_the_endpoint_answers_from_inside_and_every_refusal_is_recorded(tmp_path: Path) -> None:
    outside = outside_address()
    with serve(Fix("a.py", "a", "b", tmp_path)) as model, listener() as other, \
            listener("0.0.0.0") as everywhere:
        endpoint_port = int(model.root.rsplit(":", 1)[1])
        if outside is not None and not reachable(outside, everywhere["port"]):
            outside = None  # this machine's own address does not answer it: the attempt would prove nothing
        seen_before = 1 if outside is not None else 0
        deadline = time.monotonic() + 30  # the listener's thread counts the probe connection just made
        while everywhere["accepted"] < seen_before and time.monotonic() < deadline:
            time.sleep(0.01)
        refused: list[dict[str, Any]] = []
        # sandbox_network = "allow" is for the tests; with an endpoint the program still gets none.
        policy = sandbox.Policy(network=True)
        source = probe_source(endpoint_port, other["port"], outside, everywhere["port"])
        outcome = _run(tmp_path, [sys.executable, "-I", "-c", source], model.url, refused, policy)
        assert outcome.exit_code == 0, outcome.output
        got = results_in(outcome.output)
        assert other["accepted"] == 0 and everywhere["accepted"] == seen_before
    # The endpoint answers, whichever way the client speaks to it.
    for name in ("endpoint_forwarder", "endpoint_proxy", "endpoint_connect"):
        assert got[name].startswith("ok: HTTP/1.") and " 200 " in got[name], (name, got[name])
    # Another port of the host's loopback and a named host: refused by the proxy, with 403.
    for name in ("other_proxy", "other_connect", "named_connect"):
        assert got[name].startswith("ok: HTTP/1.1 403"), (name, got[name])
    # Around the proxy: the sandbox's loopback is its own, nothing else is routed, no name resolves.
    assert got["direct_endpoint"].startswith("failed: ConnectionRefusedError"), got
    assert got["direct_other"].startswith("failed: ConnectionRefusedError"), got
    if outside is not None:
        assert got["direct_outside"].startswith("failed: OSError") and "unreachable" in got["direct_outside"], got
    assert got["dns_lookup"].startswith("failed: "), got
    assert got["dns_server"].startswith("failed: "), got
    destinations = sorted(r["destination"] for r in refused)
    assert destinations == sorted([f"127.0.0.1:{other['port']}", f"127.0.0.1:{other['port']}",
                                   "example.com:443"]), refused
    assert {r["allowed"] for r in refused} == {f"127.0.0.1:{endpoint_port}"}
    assert "network: only 127.0.0.1:" in " ".join(outcome.notes)


def test_the_program_gets_the_proxy_variables_and_no_exemptions(tmp_path: Path) -> None:
    show = "import os, json; print('ENV ' + json.dumps({k: v for k, v in os.environ.items() if 'PROXY' in k.upper()}))"
    outcome = _run(tmp_path, [sys.executable, "-I", "-c", show], "https://api.example.com/v1", [])
    line = next(x for x in outcome.output.splitlines() if x.startswith("ENV "))
    env = __import__("json").loads(line[4:])
    address = f"http://127.0.0.1:{egress.FORWARD_PORT}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        assert env[name] == address, env
    assert env["NO_PROXY"] == "" and env["no_proxy"] == ""


def test_without_the_sandbox_the_program_runs_as_it_would_and_no_proxy_starts(tmp_path: Path) -> None:
    show = "import os; print('PROXY', os.environ.get('HTTPS_PROXY'))"
    outcome = _run(tmp_path, [sys.executable, "-I", "-c", show], "https://api.example.com", [],
                   sandbox.Policy(enabled=False))
    assert "PROXY None" in outcome.output and outcome.sandbox == "none"
    assert not any("network: only" in n for n in outcome.notes)


def test_a_missing_program_behind_the_relay_is_a_could_not_run(tmp_path: Path) -> None:
    outcome = _run(tmp_path, ["/nonexistent/engine-cli", "--version"], "https://api.example.com", [])
    assert outcome.status == "could_not_run" and outcome.exit_code == 127, outcome.output
    assert "/nonexistent/engine-cli" in outcome.output


@pytest.mark.parametrize(("head", "form", "where"), [
    (b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n", "connect", ("api.example.com", 443)),
    (b"GET http://127.0.0.1:9/v1/models HTTP/1.1\r\n\r\n", "absolute", ("127.0.0.1", 9)),
    (b"POST /v1/messages HTTP/1.1\r\n\r\n", "origin", (None, None)),
    (b"GET https://api.example.com/ HTTP/1.1\r\n\r\n", "bad", (None, None)),
    (b"CONNECT api.example.com HTTP/1.1\r\n\r\n", "bad", (None, None)),
    (b"garbage\r\n\r\n", "bad", (None, None)),
])
def test_a_request_line_names_its_destination(head: bytes, form: str, where: tuple[Any, Any]) -> None:
    request = egress.parse_head(head)
    assert (request.form, (request.host, request.port)) == (form, where)


def test_an_endpoint_is_one_host_and_port() -> None:
    end = egress.Endpoint.from_url("https://API.example.com/v1")
    assert (end.scheme, end.host, end.port) == ("https", "api.example.com", 443)
    assert end.names("api.example.com", 443) and not end.names("api.example.com", 80)
    assert not end.names("example.com", 443)
    loop = egress.Endpoint.from_url("http://127.0.0.1:8080/v1")
    assert loop.names("localhost", 8080) and not loop.names("127.0.0.1", 8081)
    with pytest.raises(ValueError, match="not an http"):
        egress.Endpoint.from_url("file:///etc/passwd")
    assert egress.forwarded_url("http://127.0.0.1:8080/v1") == f"http://127.0.0.1:{egress.FORWARD_PORT}/v1"
    assert egress.forwarded_url("https://api.example.com/v1") == "https://api.example.com/v1"


def test_an_engine_installed_by_npm_under_tmp_runs_through_its_bin_link(tmp_path: Path) -> None:
    """The sandbox's /tmp is private, so a program under the host's /tmp is shown read-only: for
    an npm install named by its node_modules/.bin link, the whole node_modules (where the link
    points, and the package's own files beside it), as `make engines` lays one in a clone under
    /tmp."""
    modules = tmp_path / "tools" / "npm" / "node_modules"
    package = modules / "@scope" / "cli"
    (package / "bin").mkdir(parents=True)
    (package / "lib").mkdir()
    (package / "lib" / "greeting.txt").write_text("hello from the package\n")
    script = package / "bin" / "cli.sh"
    script.write_text('#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\ncat "$here/../lib/greeting.txt"\n')
    script.chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "cli").symlink_to("../@scope/cli/bin/cli.sh")
    assert str(tmp_path).startswith("/tmp/"), "the test needs its files under the host's /tmp"
    outcome = _run(tmp_path, [str(modules / ".bin" / "cli")], "https://api.example.com", [])
    assert outcome.status == "finished" and outcome.exit_code == 0, outcome.output
    assert "hello from the package" in outcome.output
