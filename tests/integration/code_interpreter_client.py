#!/usr/bin/python3
"""Checks of the code interpreter's server from inside its sandbox
(test_code_interpreter.sh copies this in and runs it): the routes of
rootfs/code-interpreter/server.py on 127.0.0.1:49999, as E2B's SDK calls
them.  Prints "ok - ..." or "not ok - ..." lines; exits 1 when one failed.

    code_interpreter_client.py full    every check
    code_interpreter_client.py quick   state kept, a plot
    code_interpreter_client.py extra   what the SDK's checks do not cover: HTML,
                                       env vars, JavaScript contexts, the
                                       server's timeout, a client that leaves,
                                       a kernel's death, bad requests
"""

import base64
import http.client
import json
import os
import socket
import sys
import time

PORT = int(os.environ.get("COVE_CI_PORT", "49999"))
failed = 0


def ok(cond, what, detail=""):
    global failed
    if cond:
        print("ok - " + what, flush=True)
    else:
        failed = 1
        print("not ok - %s: %s" % (what, str(detail)[:400]), flush=True)


def req(method, path, body=None, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    c.request(method, path, body=None if body is None else json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def run(code, **kw):
    """POST /execute: (status, lines, seconds)."""
    t0 = time.monotonic()
    st, data = req("POST", "/execute", dict(code=code, **kw))
    lines = [json.loads(x) for x in data.splitlines() if x.strip()] if st == 200 else data
    return st, lines, time.monotonic() - t0


def of(lines, kind):
    return [x for x in lines if isinstance(x, dict) and x.get("type") == kind]


def main_text(lines):
    for x in of(lines, "result"):
        if x.get("is_main_result"):
            return x.get("text")
    return None


def ended(lines):
    return isinstance(lines, list) and lines and lines[-1] == {"type": "end_of_execution"}


def quick():
    st, a, _ = run("x = 1")
    st2, b, t = run("x + 1")
    ok(st == st2 == 200 and main_text(b) == "2" and ended(b), "x = 1 then x + 1 gives 2 (%.2f s)" % t, b)
    st, lines, t = run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    pngs = [x["png"] for x in of(lines, "result") if "png" in x]
    ok(pngs and base64.b64decode(pngs[0])[:8] == b"\x89PNG\r\n\x1a\n", "a matplotlib plot gives a PNG result (%.2f s)" % t, lines)


def basic():
    """What the SDK's checks (tests/e2b/code-interpreter.mjs) cover too."""
    st, lines, t = run("1+1", language="js")
    ok(main_text(lines) == "2", "JavaScript 1+1 gives 2 (%.2f s)" % t, lines)
    st, lines, _ = run('import sys\nprint("to out")\nprint("to err", file=sys.stderr)')
    ok(
        [x["text"] for x in of(lines, "stdout")] == ["to out\n"] and [x["text"] for x in of(lines, "stderr")] == ["to err\n"],
        "stdout and stderr as their own lines",
        lines,
    )
    st, lines, _ = run("def f():\n    raise ValueError('boom')\nf()")
    e = of(lines, "error")
    ok(
        e and e[0]["name"] == "ValueError" and e[0]["value"] == "boom" and "line 3" in e[0]["traceback"] and ended(lines),
        "an exception gives its name, value and traceback",
        lines,
    )
    st, body = req("POST", "/contexts", {})
    ctx = json.loads(body) if st == 200 else {}
    ok(st == 200 and ctx.get("language") == "python" and ctx.get("cwd"), "POST /contexts", body)
    cid = ctx.get("id")
    st, lines, _ = run("x", context_id=cid)
    ok(of(lines, "error") and of(lines, "error")[0]["name"] == "NameError", "a second context does not see the first's x", lines)
    run("x = 10", context_id=cid)
    st, lines, _ = run("x", context_id=cid)
    st2, lines2, _ = run("x")
    ok(main_text(lines) == "10" and main_text(lines2) == "1", "each context keeps its own x", [lines, lines2])
    st, body = req("GET", "/contexts")
    ok(st == 200 and cid in [c["id"] for c in json.loads(body)], "GET /contexts lists it", body)
    st, _ = req("POST", "/contexts/%s/restart" % cid)
    st2, lines, _ = run("x", context_id=cid)
    ok(st == 204 and of(lines, "error") and of(lines, "error")[0]["name"] == "NameError", "restart clears the context's state", lines)
    st, _ = req("DELETE", "/contexts/%s" % cid)
    st2, _, _ = run("1", context_id=cid)
    ok(st == 204 and st2 == 404, "DELETE /contexts/ID, then it is gone (404)", (st, st2))


def extra():
    """What only this client checks."""
    run("x = 1")
    st, lines, _ = run("import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    r = [x for x in of(lines, "result") if x.get("is_main_result")]
    ok(r and "<table" in r[0].get("html", "") and "a" in r[0].get("text", ""), "a DataFrame gives text and HTML", lines)
    counts = [x["execution_count"] for x in of(lines, "number_of_executions")]
    ok(counts and counts[0] >= 2, "number_of_executions counts the context's executions", lines)
    st, lines, _ = run("import os\nos.environ.get('CI_VAR')", env_vars={"CI_VAR": "per-call"})
    st2, lines2, _ = run("import os\nos.environ.get('CI_VAR')")
    ok(main_text(lines) == "'per-call'" and main_text(lines2) is None, "env_vars hold for their call only", [lines, lines2])

    st, body = req("POST", "/contexts", {"language": "javascript"})
    js = json.loads(body) if st == 200 else {}
    run("let counter = 41", context_id=js.get("id"))
    st, lines, _ = run("counter + 1", context_id=js.get("id"))
    ok(main_text(lines) == "42", "a JavaScript context keeps its declarations", lines)
    st, lines, _ = run("null.x", context_id=js.get("id"))
    e = of(lines, "error")
    ok(e and e[0]["name"] == "TypeError" and e[0]["traceback"], "a JavaScript error gives its name and stack", lines)

    # A long loop stopped by its timeout; the context goes on.
    st, lines, t = run("import time\nwhile True:\n    time.sleep(0.05)", timeout=3)
    e = of(lines, "error")
    ok(e and e[0]["name"] == "TimeoutError" and ended(lines), "a timeout interrupts a long loop (%.1f s) and ends the stream" % t, lines)
    st, lines, _ = run("x + 2")
    ok(main_text(lines) == "3", "the next execution still works, state kept", lines)
    st, lines, t = run("while (true) {}", language="js", timeout=3)
    st2, lines2, _ = run("counter", context_id=js.get("id"))
    ok(of(lines, "error") and of(lines, "error")[0]["name"] == "TimeoutError" and main_text(lines2) == "41",
       "a JavaScript busy loop is interrupted too", [lines, lines2])

    # A client that goes away interrupts its execution.
    s = socket.create_connection(("127.0.0.1", PORT))
    body = json.dumps({"code": "import time\nfor i in range(600):\n    time.sleep(0.1)\nlost = True"}).encode()
    s.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    s.recv(100)  # the head: it runs
    s.close()
    st, lines, t = run("'lost' in globals(), x")
    ok(main_text(lines) == "(False, 1)", "a client that leaves interrupts its execution, the state kept (next one in %.1f s)" % t, lines)

    # The kernel dies: a clean end, then a fresh kernel.
    st, lines, _ = run("import os\nos._exit(7)")
    e = of(lines, "error")
    ok(e and e[0]["name"] == "KernelDied" and "status 7" in e[0]["value"] and ended(lines), "a kernel's death is an error and a clean end", lines)
    st, lines, _ = run("1 + 1")
    ok(main_text(lines) == "2", "the context starts a new kernel after its death", lines)

    st, body = req("POST", "/execute", {"code": "1", "language": "cobol"})
    ok(st == 400, "an unknown language is refused (400)", body)
    st, body = req("POST", "/execute", {"code": "1", "context_id": "no-such-context"})
    ok(st == 404, "an unknown context is refused (404)", body)


def full():
    quick()
    basic()
    extra()


if __name__ == "__main__":
    {"full": full, "quick": quick, "extra": extra}[sys.argv[1] if len(sys.argv) > 1 else "full"]()
    sys.exit(failed)
