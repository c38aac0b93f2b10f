"""_cpu.py's mutation survivors (issue 28): the worker threads' names."""
import threading

from scansnap._cpu import map_on_threads


def test_map_on_threads_names_its_threads_scansnap():
    """Kills map_on_threads mutants 10, 12, 13, 14 (``thread_name_prefix`` None, absent, or
    another word): a stack dump (py-spy, faulthandler) shows the package's threads by name."""
    names = map_on_threads(lambda item, stop: (item, threading.current_thread().name), [1, 2, 3], 2)
    assert [i for i, _ in names] == [1, 2, 3]
    assert all(n.startswith("scansnap_") for _, n in names), names


class _FakeLibc:
    def __init__(self, calls, name):
        calls.append(("CDLL", name))
        self.calls = calls

    def mallopt(self, *args):
        self.calls.append(("mallopt", *args))
        return 1


def test_keep_freed_memory_sets_glibcs_two_thresholds_once(monkeypatch):
    """Kills keep_freed_memory mutants 3-24 (the library's name, each mallopt's parameter
    number and value): M_MMAP_THRESHOLD (-3) 32 MB, M_TRIM_THRESHOLD (-1) 1 GB, once a process.
    (Mutants 1, 2, ``_MALLOC_SET.append(None / False)``, are equivalent: a list holding one
    item is true whatever the item.)"""
    import ctypes

    from scansnap import _cpu
    calls = []
    monkeypatch.setattr(_cpu, "_MALLOC_SET", [])
    monkeypatch.setattr(ctypes, "CDLL", lambda name: _FakeLibc(calls, name))
    _cpu.keep_freed_memory()
    _cpu.keep_freed_memory()
    assert calls == [("CDLL", "libc.so.6"), ("mallopt", -3, 32 * 2 ** 20), ("mallopt", -1, 2 ** 30)]


def test_keep_freed_memory_without_glibc_leaves_the_allocator_alone(monkeypatch):
    """Not a mutant's test alone: a system without libc.so.6 (OSError) is no error."""
    import ctypes

    from scansnap import _cpu

    def missing(name):
        raise OSError(name)
    monkeypatch.setattr(_cpu, "_MALLOC_SET", [])
    monkeypatch.setattr(ctypes, "CDLL", missing)
    _cpu.keep_freed_memory()
    assert _cpu._MALLOC_SET
