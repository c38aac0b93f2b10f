"""Training on a CPU: independent runs on the cores, and glibc's allocator told to keep memory.

Both trainers use these: ``scansnap.train.train`` (the Fig. 6 sweep's runs, split in sets)
and the WikiText figures of ``scansnap.experiments`` (Figs. 7 and 10, a model per run).
"""
from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

_MALLOC_SET = []


def keep_freed_memory():
    """glibc (Linux) only, once per process: freed blocks of up to 32 MB stay in the process
    for the next allocation instead of going back to the system (M_MMAP_THRESHOLD and
    M_TRIM_THRESHOLD of mallopt(3)). A training step frees and allocates the same few arrays
    of 1-30 MB; returned, each comes back as fresh pages, page-faulted one at a time: about 4%
    of the Fig. 6 sweep and 5% of a WikiText step (bench/RESULTS.md). The cost: the process
    keeps its peak heap."""
    if _MALLOC_SET:
        return
    _MALLOC_SET.append(True)
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD (glibc's largest): blocks up to 32 MB from the heap
        libc.mallopt(-1, 1 << 30)    # M_TRIM_THRESHOLD: keep up to 1 GB of freed heap
    except (OSError, AttributeError):   # not glibc: its allocator, as it is
        pass


def map_on_threads(fn, items, workers: int) -> list:
    """``[fn(item, stop) for item in items]`` on ``workers`` threads, one torch thread each,
    the results in the order of ``items``.

    torch releases the GIL inside each op, so the calls run side by side on the cores; each
    runs its ops on one core, so its numbers do not depend on which thread or in which order
    it runs. ``stop`` is a threading.Event that ``fn`` checks at each step: an error in one
    call (or a Ctrl-C in the caller) sets it, cancels the calls not yet started, and is raised.
    """
    stop = threading.Event()
    caller = torch.get_num_threads()

    def one(item):
        if stop.is_set():            # started after a failure, before the caller cancelled it
            return None
        torch.set_num_threads(1)     # OpenMP's setting is per thread: the caller keeps its own
        try:
            return fn(item, stop)
        except BaseException:
            stop.set()
            raise

    try:
        with ThreadPoolExecutor(workers, thread_name_prefix="scansnap") as pool:
            futures = [pool.submit(one, item) for item in items]
            try:
                return [f.result() for f in futures]   # raises the first failed call's error
            except BaseException:
                stop.set()
                for f in futures:
                    f.cancel()
                raise
    finally:   # torch takes the last count set as the default of threads started later
        torch.set_num_threads(caller)
