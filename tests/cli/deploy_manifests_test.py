#!/usr/bin/env python3
"""The Kubernetes manifests of deploy/k8s parse (PyYAML) and say what docs/runtime.md
("Kubernetes") promises: the DaemonSet runs `emo serve` privileged, in the host's PID namespace,
with the host's /run/emo mounted where its config puts the socket; the job pod mounts the same
host directory read-only at the socket's directory and runs as a non-root uid. Without PyYAML:
a loud skip (exit 77), a failure under CI=true."""
import os
import pathlib
import sys

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "k8s"
try:
    import yaml
except ImportError:
    if os.environ.get("CI") == "true":
        sys.exit("FAIL (CI=true, so not skipped): PyYAML is not installed (python3-yaml)")
    print("*** SKIPPED: PyYAML is not installed (python3-yaml) ***")
    sys.exit(77)


def docs(name):
    with open(DEPLOY / name) as f:
        return {d["kind"]: d for d in yaml.safe_load_all(f) if d}


def mount(container, volumes, path):
    """(volume, mount) of `container` mounted at `path`."""
    m = next(m for m in container["volumeMounts"] if m["mountPath"] == path)
    return next(v for v in volumes if v["name"] == m["name"]), m


failures = []


def check(what, cond):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


ds = docs("emo-serve-daemonset.yaml")
spec = ds["DaemonSet"]["spec"]["template"]["spec"]
serve = spec["containers"][0]
conf = dict(line.split(" = ", 1) for line in ds["ConfigMap"]["data"]["serve.conf"].splitlines() if " = " in line)
check("DaemonSet: runs emo serve with the ConfigMap's config",
      serve["command"][1:] == ["serve", "--config", "/etc/emo/serve.conf"]
      and mount(serve, spec["volumes"], "/etc/emo")[0]["configMap"]["name"] == ds["ConfigMap"]["metadata"]["name"])
check("DaemonSet: privileged, host PID namespace",
      serve["securityContext"]["privileged"] is True and spec["hostPID"] is True)
vol, _ = mount(serve, spec["volumes"], "/run/emo")
check("DaemonSet: the host's /run/emo holds the socket, job files and lease record",
      vol["hostPath"]["path"] == "/run/emo" and all(conf[k].startswith("/run/emo/") for k in ("socket", "jobs_dir", "state_dir")))
check("DaemonSet: takes no GPU from the scheduler",
      "nvidia.com/gpu" not in str(serve.get("resources", {})) and
      {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in serve["env"])
pod = docs("emo-job-pod-snippet.yaml")["Pod"]["spec"]
train = pod["containers"][0]
vol, m = mount(train, pod["volumes"], os.path.dirname(conf["socket"]))
check("job pod: the host's /run/emo, read-only, at the socket's directory",
      vol["hostPath"]["path"] == "/run/emo" and m.get("readOnly") is True)
check("job pod: non-root, emo run --via-service",
      pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
      and train["command"][:3] == ["emo", "run", "--via-service"])
print("{} failed".format(len(failures)))
sys.exit(1 if failures else 0)
