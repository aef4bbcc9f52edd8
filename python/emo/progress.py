"""Pack-start reports from a training loop for ``emo run --policy FILE --no-tracer -- CMD``,
without PyTorch (``emo.torch.step`` and ``emo.torch.StepTrigger`` are these)::

    import emo.progress
    for batch in loader:
        emo.progress.step()          # a step (the policy's iteration) begins
        train_step(batch)

Under a launcher (torchrun, srun, mpirun) each process reports only its own rank's policy section
and names its GPU, so that ``emo run`` (one per node) switches each rank's clocks on that rank's
GPU alone, itself or through the clock service (docs/runtime.md, "Many GPUs, many processes" and
"The clock service"). The lines are those EMO's tracer writes (src/tracer/process_identity.h):

    H PID RANK SECTION GPU_ID            once, before the first P line (a job's policy only)
    P SECTION PACK ITERATION T_NS PID    per reported pack start (T_NS: CLOCK_MONOTONIC)

A policy without ranks (one process, possibly several GPUs) gets the one-process lines of before,
``P DEVICE PACK ITERATION T_NS``, for every section of the watch list.
"""
import os as _os
import sys as _sys
import time as _time
import warnings as _warnings

__all__ = ["StepTrigger", "step", "process_rank", "gpu_identity"]

# The launchers' rank variables, in the order EMO's tracer reads them (the first set wins;
# src/tracer/process_identity.h, rank_from_environment).
GLOBAL_RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
_WATCH_KINDS = ("pack", "copy", "memset", "graph")


def _first_rank(environ, names):
    """The first of `names` set in `environ` to a non-negative integer, else None (a value that is
    not one is skipped, as the tracer does)."""
    for name in names:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def process_rank(environ=None):
    """(rank, local_rank) of this process from the launcher's environment (default os.environ):
    RANK / OMPI_COMM_WORLD_RANK / PMIX_RANK / PMI_RANK / SLURM_PROCID and LOCAL_RANK /
    OMPI_COMM_WORLD_LOCAL_RANK / MPI_LOCALRANKID / SLURM_LOCALID, the first set; None where none is.
    ``process_rank({"RANK": "3", "LOCAL_RANK": "1"}) == (3, 1)``."""
    environ = _os.environ if environ is None else environ
    return _first_rank(environ, GLOBAL_RANK_VARIABLES), _first_rank(environ, LOCAL_RANK_VARIABLES)


def _uuid_text(raw):
    """NVML's text form of a GPU UUID from 16 bytes: "GPU-" then 8-4-4-4-12 lower-case hex."""
    h = bytes(raw).hex()
    return "GPU-{}-{}-{}-{}-{}".format(h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def _torch_uuid(ordinal):
    """The UUID of CUDA device `ordinal` from torch, only when the program has imported torch and
    CUDA is available to it (emo never imports torch itself); None otherwise."""
    torch = _sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        if cuda is None or not cuda.is_available():
            return None
        uuid = cuda.get_device_properties(ordinal).uuid
    except Exception:  # noqa: BLE001 - a torch without device UUIDs: say "unknown", not fail the job
        return None
    raw = getattr(uuid, "bytes", None)
    if raw is not None and len(raw) == 16:
        return _uuid_text(raw)
    text = str(uuid)
    return text if text.upper().startswith(("GPU-", "MIG-")) else "GPU-" + text


def gpu_identity(gpu=None, environ=None, local_rank=None):
    """The identity ``emo run`` maps to an NVML GPU (a UUID, "GPU-5a1c…", or a PCI bus id) of the
    GPU this process runs on, or None when it cannot be told.

    `gpu`: a UUID or PCI bus id (returned as given), or the CUDA device ordinal the process uses;
    default its local rank (LOCAL_RANK, …; torchrun's convention ``torch.cuda.set_device(local_rank)``),
    0 without one, and 0 when CUDA_VISIBLE_DEVICES lists one GPU only (a launcher that gives each
    process its own GPU). The ordinal's identity: the CUDA_VISIBLE_DEVICES entry it selects when
    that entry is a UUID (as Slurm and Kubernetes device plugins may set it); else, when the
    program has imported torch and CUDA is available, ``torch.cuda.get_device_properties(ordinal).uuid``;
    else None. A CUDA ordinal or an index in CUDA_VISIBLE_DEVICES is never sent as the identity:
    CUDA renumbers devices (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), NVML does not.
    """
    environ = _os.environ if environ is None else environ
    if isinstance(gpu, str) and not gpu.strip().isdigit():
        return gpu.strip()
    if gpu is None:
        if local_rank is None:
            local_rank = process_rank(environ)[1]
        ordinal = local_rank if local_rank is not None else 0
    else:
        ordinal = int(gpu)
    visible = [e.strip() for e in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()]
    if gpu is None and len(visible) == 1:
        ordinal = 0
    if visible:
        if ordinal >= len(visible):
            return None
        if visible[ordinal].upper().startswith(("GPU-", "MIG-")):
            return visible[ordinal]
    return _torch_uuid(ordinal)


def read_watch_list(path):
    """(sections, devices) of an emo.watch/1 file (docs/runtime.md): `sections` maps each policy
    section (``gpu DEVICE RANK`` lines) to its rank (-1: none); `devices` are the sections with a
    pack start (``KIND DEVICE PACK …`` lines), sorted. ({}, []) for a missing or unreadable file."""
    sections, devices = {}, set()
    if not path:
        return sections, []
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[0] == "gpu":
                    sections[int(w[1])] = int(w[2])
                elif len(w) > 2 and w[0] in _WATCH_KINDS:
                    devices.add(int(w[1]))
    except (OSError, ValueError):
        return {}, []
    return sections, sorted(devices)


class StepTrigger:
    """Framework-side pack triggers for ``emo run --policy FILE --no-tracer -- CMD``: tells EMO's
    runtime where each step (the policy's iteration) and, optionally, each pack begins, by writing
    lines to the pipe in ``$EMO_PROGRESS_FD`` (see the module's doc). The runtime anchors the
    policy's predicted pack offsets at each reported start, so reporting pack 0 of every step is
    enough.

    Which sections: for a job's policy (the watch list ``$EMO_WATCH_FILE`` gives sections ranks),
    only the section of this process's `rank` (default: from the launcher's environment,
    :func:`process_rank`), on the GPU :func:`gpu_identity` names for `gpu` (default: its local
    rank's); a rank the policy does not have reports nothing (a RuntimeWarning says so once), and
    so does, in effect, a GPU that cannot be told (its hello says "-": ``emo run`` warns and ignores
    it; a RuntimeWarning says pass ``gpu=``). Otherwise every section with a pack start in the watch list (else
    GPU 0), or `devices` when given. Without ``$EMO_PROGRESS_FD`` (not under ``emo run``) every call
    does nothing. `environ` (default os.environ) is where the variables are read.
    """

    def __init__(self, devices=None, fd=None, watch_file=None, rank=None, gpu=None, environ=None):
        environ = _os.environ if environ is None else environ
        env_fd = environ.get("EMO_PROGRESS_FD")
        self.fd = fd if fd is not None else (int(env_fd) if env_fd and env_fd.isdigit() else None)
        self.iteration = -1
        self.pid = _os.getpid()
        self.rank, local_rank = process_rank(environ)
        if rank is not None:
            self.rank = int(rank)
        self.section = None  # the job policy's section this process follows; None: one-process lines
        self.gpu_id = None
        self._hello_sent = False
        sections, watched = read_watch_list(watch_file or environ.get("EMO_WATCH_FILE"))
        if devices is not None:
            self.devices = sorted({int(d) for d in devices})
        elif any(r >= 0 for r in sections.values()):
            mine = [d for d, r in sections.items() if self.rank is not None and r == self.rank]
            self.devices = mine[:1]
            if mine:
                self.section = mine[0]
                self.gpu_id = gpu_identity(gpu, environ, local_rank)
            if self.active:
                self._warn_if_unrouted(sections, environ)
        else:
            self.devices = watched or sorted(sections) or [0]

    def _warn_if_unrouted(self, sections, environ):
        if self.section is None:
            _warnings.warn("emo: rank {} has no section in the policy (its ranks: {}): this process reports no pack "
                           "start and its GPU keeps its default clocks".format(
                               "(none in the environment)" if self.rank is None else self.rank,
                               sorted(r for r in sections.values() if r >= 0)), RuntimeWarning, stacklevel=3)
        elif self.gpu_id is None:
            _warnings.warn("emo: cannot tell which GPU rank {} runs on (CUDA_VISIBLE_DEVICES={!r} names no UUID and "
                           "torch gives none): emo run will ignore its pack starts; pass gpu='GPU-…' (its UUID, "
                           "`emo gpus`)".format(self.rank, environ.get("CUDA_VISIBLE_DEVICES", "")),
                           RuntimeWarning, stacklevel=3)

    @property
    def active(self):
        """True when the lines go to a pipe (under ``emo run``)."""
        return self.fd is not None

    def _write(self, device, pack, iteration):
        if self.fd is None:
            return
        t_ns = _time.clock_gettime_ns(_time.CLOCK_MONOTONIC)
        if self.section is None:
            _os.write(self.fd, "P {} {} {} {}\n".format(device, pack, iteration, t_ns).encode())
            return
        if not self._hello_sent:
            _os.write(self.fd, "H {} {} {} {}\n".format(self.pid, self.rank, self.section, self.gpu_id or "-").encode())
            self._hello_sent = True
        _os.write(self.fd, "P {} {} {} {} {}\n".format(device, pack, iteration, t_ns, self.pid).encode())

    def step(self):
        """A new step begins: reports pack 0 of the next iteration on every device followed."""
        self.iteration += 1
        for d in self.devices:
            self._write(d, 0, self.iteration)

    def pack(self, index, device=None):
        """Pack `index` of the current step begins (on `device`, default every device followed; a
        job's process follows only its own section, and ignores another `device`)."""
        if self.iteration < 0:
            raise ValueError("pack {}: call step() first (no step has begun)".format(index))
        if int(index) < 0:
            raise ValueError("pack {}: must be >= 0".format(index))
        for d in ([int(device)] if device is not None else self.devices):
            if self.section is None or d == self.section:
                self._write(d, int(index), self.iteration)


_trigger = None


def step():
    """``StepTrigger().step()`` on one trigger per process, made on first use: call it where each
    training step begins. Does nothing outside ``emo run --no-tracer``."""
    global _trigger
    if _trigger is None:
        _trigger = StepTrigger()
    _trigger.step()
