"""The ``emo`` console script of the wheel: runs the ``emo`` executable installed as package data
(``emo/bin/emo``) with the same arguments, in this process (``os.execv``), so that its exit code,
signals and terminal are the command's own. The executable finds ``libemo_tracer.so`` and the
example trace relative to itself (``emo/bin/``, ``emo/data/traces/``)."""
import os
import sys


def executable():
    """Path of the installed ``emo`` executable (``<package>/bin/emo``); it may not exist (an
    editable or build-tree package has none)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "emo")


def main():
    """Replaces this process with ``emo/bin/emo`` and the command line's arguments. Exits 2 with one
    line on stderr when the executable is not installed."""
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("emo: error: {}: the emo executable is not in this install of the emo package "
                         "(install the wheel, scripts/build-wheel.sh)\n".format(exe))
        sys.exit(2)
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
