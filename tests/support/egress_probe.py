"""A program that tries every way out of an engine's sandbox and prints what each attempt got
(one line `EGRESS {json}`): the endpoint through the forwarder, the proxy and a CONNECT
tunnel; another 127.0.0.1 port and a named host through the proxy; the host's 127.0.0.1 and a
non-loopback address of the host directly; a DNS lookup and a query to the nameserver.

`probe_source()` is its text with the ports filled in; run it with `python3 -c`. A host
listener on another port counts whether anything reached it (`support.sandbox.listener`).
"""

from __future__ import annotations

import socket
import subprocess

FORWARD_PORT = 47101  # autocode.sandbox.egress.FORWARD_PORT (the probe names it as an engine would)

PROBE = r'''
import json, socket, time
EP, OTHER, OUTSIDE, OUTSIDE_PORT, FWD = {endpoint}, {other}, {outside!r}, {outside_port}, {forward}
results = {{}}
seconds = {{}}

def attempt(name, fn):
    began = time.monotonic()
    try:
        results[name] = "ok: " + fn()
    except Exception as exc:
        results[name] = "failed: " + type(exc).__name__ + ": " + str(exc)
    seconds[name] = round(time.monotonic() - began, 2)

def status(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(4096)
        if not more:
            break
        data += more
    return data.split(b"\r\n", 1)[0].decode()

def ask(head, then=None):
    def go():
        with socket.create_connection(("127.0.0.1", FWD), timeout=10) as s:
            s.sendall(head.encode())
            line = status(s)
            if then is None or " 200 " not in line + " ":
                return line
            s.sendall(then.encode())
            return status(s)
    return go

GET = "GET {{}} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n"
attempt("endpoint_forwarder", ask(GET.format("/v1/models")))
attempt("endpoint_proxy", ask(GET.format(f"http://127.0.0.1:{{EP}}/v1/models")))
attempt("endpoint_connect", ask(f"CONNECT 127.0.0.1:{{EP}} HTTP/1.1\r\nHost: probe\r\n\r\n", GET.format("/v1/models")))
attempt("other_proxy", ask(GET.format(f"http://127.0.0.1:{{OTHER}}/")))
attempt("other_connect", ask(f"CONNECT 127.0.0.1:{{OTHER}} HTTP/1.1\r\nHost: probe\r\n\r\n"))
attempt("named_connect", ask("CONNECT example.com:443 HTTP/1.1\r\nHost: probe\r\n\r\n"))

def direct(host, port):
    def go():
        socket.create_connection((host, port), timeout=5).close()
        return "connected"
    return go

attempt("direct_endpoint", direct("127.0.0.1", EP))
attempt("direct_other", direct("127.0.0.1", OTHER))
if OUTSIDE:
    attempt("direct_outside", direct(OUTSIDE, OUTSIDE_PORT))
attempt("dns_lookup", lambda: str(socket.getaddrinfo("example.com", 443)[0][4]))

def nameserver():
    servers = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")]
    query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
    with socket.socket(socket.AF_INET6 if ":" in servers[0] else socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        s.sendto(query, (servers[0], 53))
        return repr(s.recv(512)[:2])

attempt("dns_server", nameserver)
results["_seconds"] = json.dumps(seconds)  # how long each attempt took, for a failure's message
print("EGRESS " + json.dumps(results), flush=True)
'''


def probe_source(endpoint_port: int, other_port: int, outside: str | None, outside_port: int) -> str:
    return PROBE.format(endpoint=endpoint_port, other=other_port, outside=outside or "",
                        outside_port=outside_port, forward=FORWARD_PORT)


def outside_address() -> str | None:
    """A non-loopback IPv4 address of this machine (read at run time), or None."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        words = line.split()
        if "inet" in words:
            return words[words.index("inet") + 1].split("/")[0]
    return None


def reachable(host: str, port: int) -> bool:
    """Whether this process (outside any sandbox) reaches host:port: the attempt inside means something."""
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError:
        return False
    return True


def results_in(output: str) -> dict[str, str]:
    import json

    for line in output.splitlines():
        start = line.find("EGRESS {")
        if start >= 0:
            found: dict[str, str] = json.loads(line[start + len("EGRESS "):])
            return found
    raise AssertionError(f"the probe printed no results:\n{output[-3000:]}")
