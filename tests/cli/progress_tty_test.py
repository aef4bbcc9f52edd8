#!/usr/bin/env python3
"""`emo optimize`'s progress bar under a pseudo-terminal (the pty module): drawn on stderr when
stderr is a terminal, within the terminal's width, ended with a newline; nothing with --quiet or
with stderr redirected to a file; stdout (`--json -`) stays valid JSON, the same JSON as without a
terminal.  Usage: progress_tty_test.py PATH/TO/emo   (prints "N passed, N failed"; exit 77: skipped)"""
import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import tempfile
import termios

EMO = sys.argv[1]
DATA = os.environ.get("EMO_DATA_DIR") or os.environ.get("EMO_DEFAULT_DATA_DIR", "")
A = os.path.join(DATA, "kineto", "hta_sampled_2rank_rank0.json.gz")
B = os.path.join(DATA, "kineto", "hta_cuda_event_sync_multi_stream.json.gz")
COLUMNS = 60
passes = fails = 0


def check(name, cond, detail=""):
    global passes, fails
    if cond:
        passes += 1
        print("ok  ", name)
    else:
        fails += 1
        print("FAIL", name, detail[-2000:])


def run(args, tty_stdout=False, stderr_file=None):
    """Runs emo with stderr on a pseudo-terminal COLUMNS wide (or in `stderr_file`), stdout on the
    same terminal (tty_stdout) or a pipe. Returns (exit code, stdout bytes, terminal bytes)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep "\n" as written (no "\r\n" translation)
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    err = stderr_file if stderr_file is not None else slave
    proc = subprocess.Popen([EMO] + args, stdin=subprocess.DEVNULL, stderr=err,
                            stdout=slave if tty_stdout else subprocess.PIPE)
    os.close(slave)
    terminal = b""
    while True:  # read the terminal until the child closes it (EIO on Linux)
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        terminal += chunk
    out = proc.stdout.read() if proc.stdout else b""
    rc = proc.wait()
    os.close(master)
    return rc, out, terminal


def main():
    if not (os.path.isfile(A) and os.path.isfile(B)):
        msg = "real data not found at {} (set EMO_DATA_DIR)".format(DATA)
        if os.environ.get("CI") == "true":
            print("FAIL (CI=true, so not skipped):", msg)
            return 1
        print("*** SKIPPED:", msg, "***")
        return 77
    base = [A, B, "--gpu", "A100-SXM4-80GB", "--max-slowdown", "0.05"]

    # stderr on the terminal, stdout JSON to a pipe.
    rc, out, tty = run(["optimize"] + base + ["--json", "-"])
    text = tty.decode("utf-8", "replace")
    check("runs under a terminal", rc == 0, text)
    check("a bar on the terminal", re.search(r"optimize \[1/2\] profiling \[[#.]+\] \d+/\d+", text) is not None, text)
    check("the second trace has its bar", "optimize [2/2] evaluation [" in text, text)
    check("redrawn in place with \\r, ended with a newline", "\r" in text and text.endswith("\n"), text)
    lines = [re.sub(r"\x1b\[K", "", part) for part in re.split(r"[\r\n]", text) if part]
    widest = max((len(line) for line in lines), default=0)
    check("within the terminal's width ({} columns)".format(COLUMNS), 0 < widest < COLUMNS, repr(lines[:5]))
    try:
        doc = json.loads(out)
        check("--json - stdout is valid JSON under a terminal", len(doc["traces"]) == 2, out.decode()[:500])
    except ValueError as e:
        doc = None
        check("--json - stdout is valid JSON under a terminal", False, "{}: {}".format(e, out[:500]))

    # --quiet: nothing on the terminal, the same JSON.
    rc, quiet_out, tty = run(["optimize"] + base + ["--json", "-", "--quiet"])
    check("--quiet: nothing on the terminal", rc == 0 and tty == b"", repr(tty[:300]))
    check("--quiet: the same JSON", doc is not None and json.loads(quiet_out) == doc)

    # stderr redirected to a file: no bar there; stdout's text as usual.
    with tempfile.TemporaryFile() as f:
        rc, out, tty = run(["optimize"] + base, stderr_file=f)
        f.seek(0)
        err = f.read()
    check("stderr to a file: nothing written there", rc == 0 and err == b"", repr(err[:300]))
    check("stderr to a file: the text result on stdout", b"EMO policy" in out and b"[SIMULATED]" in out, out.decode()[:300])

    # stdout and stderr on one terminal: each trace's text starts on a line of its own.
    rc, _, tty = run(["optimize"] + base, tty_stdout=True)
    text = tty.decode("utf-8", "replace")
    starts = [m.start() for m in re.finditer(re.escape(A) + ": whole trace|" + re.escape(B) + ": whole trace", text)]
    check("text and bar share a terminal cleanly",
          rc == 0 and len(starts) == 2 and all(text[s - 1] == "\n" for s in starts), text[:1500])

    # An error after the bar was drawn: the message on a line of its own.
    rc, _, tty = run(["optimize", A, os.path.join(DATA, "no_such_trace.json.gz"), "--gpu", "A100-SXM4-80GB",
                      "--max-slowdown", "0.05", "--json", "-"])
    last = tty.decode("utf-8", "replace").rstrip("\n").split("\n")[-1]
    check("an error starts its own line", rc == 2 and last.startswith("emo: error: "), repr(tty[-400:]))

    print("{} passed, {} failed".format(passes, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
