"""Past one machine: the same command under PyTorch's launcher, ``torchrun``.

The paper's large grids are independent runs (learning rates x seeds): no gradient is shared
between them, so no data or model parallelism is needed, only a way to start one process per
device and collect the rows. ``torchrun`` starts the processes (on one machine, or on many with
its rendezvous flags) and sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT``; ``python -m scansnap reproduce`` notices them and:

1. joins the process group: ``gloo`` on CPUs, ``nccl`` on GPUs (one GPU per rank: rank r of a
   machine uses ``cuda:LOCAL_RANK``);
2. splits the runs by rank, *in whole units of work* (:func:`share`): the runs that compute
   together stay together, so a run's numbers never depend on the world size. The units:
   Fig. 10, one run on a CPU (each run computes on one torch thread), the learning rates of
   one seed on a GPU (one batched program); Fig. 7, one model; the Syn-Medium sweep
   (Figs. 6, 11, 12), the runs of one seed (they share their batches);
3. gathers every rank's results on rank 0 (:func:`gather`), in the order one process would
   have computed them, and rank 0 alone writes the result set, atomically, as always, with
   the world size and backend in its provenance record. The other figures (closed forms,
   Figs. 4 and 5, ``freeze``: one run each) are computed by rank 0 alone.

A rank that fails (an exception: a diverged run, a full disk, a missing GPU) reports it, and
every rank stops with one line naming the rank and the error, before anything is written:
``--out`` keeps its previous set. A rank that dies outright (killed, out of memory) is noticed
by torchrun, which stops the others, again before rank 0 commits.

On CPUs the rows are equal, bit for bit, to one process's run of the same command, however the
units divide among the ranks: a run's arithmetic does not depend on which runs share its
tensors (``SupportYZ.sgd_step`` keeps the fused SGD kernel's scalar tail, which rounds
differently, off every run). Tested in ``tests/test_distributed.py`` with 2 ranks, seeds split
evenly and unevenly; provided the machines compute alike (the same
CPU kind: a run's sums are done in the same order, but another instruction set rounds
differently, and Fig. 10's runs are chaotic). See bench/RESULTS.md, "Beyond one machine", for
a multi-node (SLURM) example.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from dataclasses import dataclass

import torch

BACKENDS = ("gloo", "nccl")
TIMEOUT_ENV = "SCANSNAP_DIST_TIMEOUT"     # seconds a rank waits for the others (default 2 h)


class RankFailed(RuntimeError):
    """Some rank of a distributed run failed; the message names it and its error."""


@dataclass(frozen=True)
class World:
    """This process's place in a ``torchrun`` job."""
    rank: int
    size: int
    local_rank: int
    backend: str

    @property
    def main(self) -> bool:
        """Rank 0: the one that prints and writes."""
        return self.rank == 0

    def record(self, argv=None, environ=None) -> dict:
        """What the provenance record says about the job: the launcher as torchrun's flags
        (``torchrun --standalone --nproc_per_node N``; ``--nnodes`` past one machine; from torchrun's
        ``LOCAL_WORLD_SIZE`` and ``GROUP_WORLD_SIZE``), and the ``command`` as the torchrun line
        that re-runs it (on several machines, add your rendezvous flags: they are not recorded)."""
        import shlex
        env = os.environ if environ is None else environ
        argv = sys.argv[1:] if argv is None else list(argv)
        per_node = env.get("LOCAL_WORLD_SIZE") or str(self.size)
        nodes = env.get("GROUP_WORLD_SIZE") or "1"
        launcher = ["torchrun", *(["--nnodes", nodes] if nodes != "1" else ["--standalone"]), "--nproc_per_node", per_node]
        return {"launcher": shlex.join(launcher), "command": shlex.join([*launcher, "-m", "scansnap", *argv]),
                "world_size": self.size, "backend": self.backend}


def from_env(environ=None) -> tuple[int, int, int] | None:
    """(rank, world size, local rank) from torchrun's variables, or None outside torchrun (or with
    one process). Malformed values are a ValueError naming the variable."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env and "RANK" not in env:
        return None
    out = []
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        value = env.get(name, "0" if name == "LOCAL_RANK" else None)
        try:
            out.append(int(value))
        except (TypeError, ValueError):
            raise ValueError(f"{name}={value!r} is not an integer (set by torchrun: start with "
                             "`torchrun --nproc_per_node N -m scansnap ...`)") from None
    rank, size, local = out
    if size < 1 or not 0 <= rank < size or local < 0:
        raise ValueError(f"RANK={rank}, WORLD_SIZE={size}, LOCAL_RANK={local} do not describe a process group")
    return None if size == 1 else (rank, size, local)


def device_for(device: str, local_rank: int) -> torch.device:
    """The device of a rank: the CPU, or ``cuda:LOCAL_RANK`` (one GPU per rank). ``device`` is the
    command line's ``--device``: ``auto``, ``cpu`` or ``cuda`` (a numbered ``cuda:N`` is refused:
    under torchrun each rank takes its own GPU)."""
    if device == "cpu":
        return torch.device("cpu")
    if device == "auto" and not torch.cuda.is_available():
        return torch.device("cpu")
    if device not in ("auto", "cuda"):
        raise ValueError(f"--device {device} under torchrun: use --device cuda (each rank takes the GPU "
                         "numbered by its LOCAL_RANK), cpu or auto")
    if not torch.cuda.is_available():
        raise ValueError("--device cuda asked for, but CUDA is not available here")
    n = torch.cuda.device_count()
    if local_rank >= n:
        raise ValueError(f"local rank {local_rank} has no GPU of its own: this machine has {n}; "
                         f"start at most {n} processes a machine (--nproc_per_node {n})")
    return torch.device("cuda", local_rank)


def init(device: str) -> tuple[World | None, str]:
    """Join torchrun's process group if this process is one of several: (World or None, the
    device this rank computes on, as text). Outside torchrun: (None, ``device`` unchanged)."""
    where = from_env()
    if where is None:
        return None, device
    rank, size, local = where
    dev = device_for(device, local)
    backend = os.environ.get("SCANSNAP_DIST_BACKEND") or ("nccl" if dev.type == "cuda" else "gloo")
    if backend not in BACKENDS:
        raise ValueError(f"SCANSNAP_DIST_BACKEND={backend!r}: use one of {BACKENDS}")
    import torch.distributed as dist
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV, 7200))
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {os.environ[TIMEOUT_ENV]!r}") from None
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group(backend, rank=rank, world_size=size, timeout=_dt.timedelta(seconds=seconds))
    return World(rank, size, local, backend), str(dev)


def finish(world: World | None, barrier: bool = False) -> None:
    """Leave the process group (a no-op outside torchrun); ``barrier``: once every rank is here."""
    if world is not None:
        import torch.distributed as dist
        if dist.is_initialized():
            if barrier:
                dist.barrier()
            dist.destroy_process_group()


def agree(world: World | None, error: str | None) -> str | None:
    """Every rank's error (or None) gathered: the first one, in rank order, on every rank. So a
    check that only one rank can make (rank 0's ``--out``) stops them all alike."""
    if world is None:
        return error
    import torch.distributed as dist
    errors = [None] * world.size
    dist.all_gather_object(errors, None if error is None else f"rank {world.rank}: {error}")
    return next((e for e in errors if e is not None), None)


def share(n_units: int, world: World | None) -> list[int]:
    """The units of work (indices 0..n_units-1) this rank computes: rank r takes r, r + N, ...
    (round robin, so ranks get near-equal shares of a grid listed in order)."""
    if world is None:
        return list(range(n_units))
    return list(range(world.rank, n_units, world.size))


def gather(world: World | None, units: list, compute, what: str):
    """Run ``compute(my units) -> [result per unit]`` on every rank for its share of ``units``;
    on rank 0 return every unit's result in the order of ``units``, on the others None. If any
    rank raises, every rank raises :class:`RankFailed` naming it (rank 0's staging is then
    removed by the caller's ``with``, and nothing is written)."""
    mine = share(len(units), world)
    if world is None:
        return compute([units[i] for i in mine])
    import torch.distributed as dist
    try:
        results = compute([units[i] for i in mine])
        if len(results) != len(mine):
            raise RuntimeError(f"{len(results)} results for {len(mine)} units")
        payload = ("ok", mine, results)
    except Exception as e:           # a signal (SystemExit, KeyboardInterrupt) ends the job at once
        payload = ("error", world.rank, f"{type(e).__name__}: {e}")
    parts = [None] * world.size if world.main else None
    dist.gather_object(payload, parts, dst=0)
    status = [None]
    if world.main:
        failed = [p for p in parts if p[0] == "error"]
        status[0] = (f"{what}: rank {failed[0][1]} of {world.size} failed: {failed[0][2]}"
                     + (f" (and {len(failed) - 1} more rank(s))" if len(failed) > 1 else "")) if failed else None
    dist.broadcast_object_list(status, src=0)
    if status[0] is not None:
        raise RankFailed(status[0])
    if not world.main:
        return None
    out = [None] * len(units)
    for _, idx, results in parts:
        for i, r in zip(idx, results):
            out[i] = r
    return out


def say(world: World | None, *args, **kw) -> None:
    """print on rank 0 only (every rank runs the same command; one transcript is enough)."""
    if world is None or world.main:
        print(*args, **kw)
        (kw.get("file") or sys.stdout).flush()
