"""_cpu.py's mutation survivors (issue 28): the worker threads' names."""
import threading

from scansnap._cpu import map_on_threads


def test_map_on_threads_names_its_threads_scansnap():
    """Kills map_on_threads mutants 10, 12, 13, 14 (``thread_name_prefix`` None, absent, or
    another word): a stack dump (py-spy, faulthandler) shows the package's threads by name."""
    names = map_on_threads(lambda item, stop: (item, threading.current_thread().name), [1, 2, 3], 2)
    assert [i for i, _ in names] == [1, 2, 3]
    assert all(n.startswith("scansnap_") for _, n in names), names
