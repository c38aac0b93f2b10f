"""Mutation survivors of ``scansnap/distributed.py`` (issue 28), in-process.

``tests/test_distributed.py`` runs real ``torchrun`` jobs, in subprocesses that mutmut's
trampolines do not reach. Here each rank's side of a collective is run in this process against
a fake ``torch.distributed`` (``FakeDist``) that does what torch documents for the calls the
module makes: ``gather_object`` fills the destination's list with every rank's object in rank
order (and refuses a list on another rank, as torch does); ``broadcast_object_list`` gives the
other ranks the source's list; ``all_gather_object`` gives every rank all objects; ``dst`` and
``src`` default to rank 0 (torch 2.5+). The other ranks' objects are given by the test."""
import datetime
import io
import sys

import pytest
import torch
import torch.distributed

from scansnap import distributed
from scansnap.distributed import RankFailed, World


class FakeDist:
    """This process is rank ``rank`` of ``size``; ``others[r]`` is what rank r sends."""

    def __init__(self, rank, size, others=None, root_status=None):
        self.rank, self.size, self.others = rank, size, dict(others or {})
        self.root_status = root_status         # what rank 0 broadcasts, seen from another rank
        self.calls = []

    def gather_object(self, obj, object_gather_list=None, dst=None):
        dst = 0 if dst is None else dst
        self.calls.append(("gather_object", dst))
        if self.rank == dst:
            assert object_gather_list is not None and len(object_gather_list) == self.size
            for r in range(self.size):
                object_gather_list[r] = obj if r == self.rank else self.others[r]
        elif object_gather_list is not None:
            raise ValueError("Argument ``object_gather_list`` must NOT be specified on non-destination ranks.")
        self.sent = obj

    def broadcast_object_list(self, object_list, src=None):
        src = 0 if src is None else src
        self.calls.append(("broadcast_object_list", src))
        if self.rank != src:
            object_list[:] = [self.root_status]
        self.broadcast = list(object_list)

    def all_gather_object(self, object_list, obj):
        self.calls.append(("all_gather_object",))
        assert len(object_list) == self.size
        for r in range(self.size):
            object_list[r] = obj if r == self.rank else self.others.get(r)

    def is_initialized(self):
        return True

    def barrier(self):
        self.calls.append(("barrier",))

    def destroy_process_group(self):
        self.calls.append(("destroy_process_group",))

    def init_process_group(self, backend, rank=None, world_size=None, timeout=None):
        self.calls.append(("init_process_group", backend, rank, world_size, timeout))


@pytest.fixture
def fake(monkeypatch):
    """``fake(rank, size, ...)`` puts a FakeDist in place of torch.distributed's calls."""
    def make(rank, size, **kw):
        fd = FakeDist(rank, size, **kw)
        for name in ("gather_object", "broadcast_object_list", "all_gather_object", "is_initialized",
                     "barrier", "destroy_process_group", "init_process_group"):
            monkeypatch.setattr(torch.distributed, name, getattr(fd, name))
        return fd
    return make


def squares(units):
    return [u * u for u in units]


# ---------------------------------------------------------------------------------------------
# gather: every rank's share computed, the results in the order of the units on rank 0
# ---------------------------------------------------------------------------------------------

def test_one_process_computes_every_unit_in_order():
    seen = []
    assert distributed.gather(None, [3, 1, 2], lambda u: seen.append(list(u)) or squares(u), "x") == [9, 1, 4]
    assert seen == [[3, 1, 2]]


def test_rank_0_computes_its_share_and_puts_every_ranks_rows_in_unit_order(fake):
    units = [10, 11, 12, 13, 14]                       # rank 0: 0, 2, 4; rank 1: 1, 3
    fd = fake(0, 2, others={1: ("ok", [1, 3], ["r1", "r3"])})
    seen = []
    out = distributed.gather(World(0, 2, 0, "gloo"), units, lambda u: seen.append(list(u)) or [f"u{x}" for x in u], "x")
    assert seen == [[10, 12, 14]]
    assert out == ["u10", "r1", "u12", "r3", "u14"]
    assert fd.sent == ("ok", [0, 2, 4], ["u10", "u12", "u14"])
    assert fd.calls == [("gather_object", 0), ("broadcast_object_list", 0)]
    assert fd.broadcast == [None]                       # no rank failed: rank 0 says so


def test_another_rank_sends_its_share_and_returns_none(fake):
    fd = fake(1, 3, root_status=None)
    seen = []
    assert distributed.gather(World(1, 3, 1, "gloo"), list(range(7)),
                              lambda u: seen.append(list(u)) or squares(u), "x") is None
    assert seen == [[1, 4]]
    assert fd.sent == ("ok", [1, 4], [1, 16])
    assert fd.calls == [("gather_object", 0), ("broadcast_object_list", 0)]


def test_a_rank_that_raises_sends_its_error_and_every_rank_raises_rank_failed(fake):
    def boom(units):
        raise FloatingPointError("the run diverged")
    fd = fake(1, 2, root_status="fig7: rank 1 of 2 failed: FloatingPointError: the run diverged")
    with pytest.raises(RankFailed, match=r"^fig7: rank 1 of 2 failed: FloatingPointError: the run diverged$"):
        distributed.gather(World(1, 2, 1, "gloo"), [1, 2], boom, "fig7")
    assert fd.sent == ("error", 1, "FloatingPointError: the run diverged")


def test_rank_0_names_the_first_failed_rank_and_counts_the_others(fake):
    other = ("error", 1, "ValueError: one")
    fd = fake(0, 4, others={1: other, 2: ("error", 2, "OSError: two"), 3: ("ok", [3], [9])})
    with pytest.raises(RankFailed) as e:
        distributed.gather(World(0, 4, 0, "gloo"), [0, 1, 2, 3], squares, "the sweep")
    assert str(e.value) == "the sweep: rank 1 of 4 failed: ValueError: one (and 1 more rank(s))"
    assert fd.broadcast == [str(e.value)]
    fd = fake(0, 3, others={1: ("ok", [1], [1]), 2: ("error", 2, "OSError: two")})
    with pytest.raises(RankFailed) as e:
        distributed.gather(World(0, 3, 0, "gloo"), [0, 1, 2], squares, "the sweep")
    assert str(e.value) == "the sweep: rank 2 of 3 failed: OSError: two"        # one failure: no count


def test_rank_0s_own_failure_is_named_too(fake):
    fake(0, 2, others={1: ("ok", [1], [1])})
    with pytest.raises(RankFailed, match=r"^x: rank 0 of 2 failed: KeyError: 'k'$"):
        distributed.gather(World(0, 2, 0, "gloo"), [0, 1], lambda u: {}["k"], "x")


def test_a_compute_that_returns_too_few_rows_is_a_failure_of_its_rank(fake):
    fd = fake(1, 2, root_status="stop")
    with pytest.raises(RankFailed):
        distributed.gather(World(1, 2, 1, "gloo"), [0, 1, 2, 3], lambda u: [1], "x")
    assert fd.sent == ("error", 1, "RuntimeError: 1 results for 2 units")


# ---------------------------------------------------------------------------------------------
# agree, finish, init, say, record, device_for
# ---------------------------------------------------------------------------------------------

def test_agree_gives_every_rank_the_first_error_in_rank_order(fake):
    assert distributed.agree(None, None) is None and distributed.agree(None, "bad") == "bad"
    fake(1, 3, others={0: None, 2: "rank 2: disk full"})
    assert distributed.agree(World(1, 3, 1, "gloo"), None) == "rank 2: disk full"
    fake(2, 3, others={0: "rank 0: --out is a file", 1: None})
    assert distributed.agree(World(2, 3, 0, "gloo"), "mine") == "rank 0: --out is a file"
    fake(1, 2, others={0: None})
    assert distributed.agree(World(1, 2, 1, "gloo"), "late") == "rank 1: late"
    fake(0, 2, others={1: None})
    assert distributed.agree(World(0, 2, 0, "gloo"), None) is None


def test_finish_leaves_the_group_after_a_barrier_if_asked(fake):
    distributed.finish(None)                          # outside torchrun: nothing to leave
    fd = fake(0, 2)
    distributed.finish(World(0, 2, 0, "gloo"))
    assert fd.calls == [("destroy_process_group",)]
    fd = fake(1, 2)
    distributed.finish(World(1, 2, 1, "gloo"), barrier=True)
    assert fd.calls == [("barrier",), ("destroy_process_group",)]


def test_finish_of_a_group_already_gone_does_nothing(fake, monkeypatch):
    fd = fake(0, 2)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    distributed.finish(World(0, 2, 0, "gloo"), barrier=True)
    assert fd.calls == []


TORCHRUN_ENV = {"RANK": "1", "WORLD_SIZE": "3", "LOCAL_RANK": "0"}


@pytest.fixture
def torchrun_env(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SCANSNAP_DIST_BACKEND", distributed.TIMEOUT_ENV):
        monkeypatch.delenv(k, raising=False)

    def put(**env):
        for k, v in {**TORCHRUN_ENV, **env}.items():
            monkeypatch.setenv(k, v)
    return put


def test_init_outside_torchrun_changes_nothing(fake, torchrun_env):
    fd = fake(0, 1)
    assert distributed.init("cuda:1") == (None, "cuda:1")
    assert fd.calls == []


def test_init_joins_a_gloo_group_on_cpus_with_a_2_hour_default_timeout(fake, torchrun_env):
    torchrun_env()
    fd = fake(1, 3)
    assert distributed.init("cpu") == (World(1, 3, 0, "gloo"), "cpu")
    assert fd.calls == [("init_process_group", "gloo", 1, 3, datetime.timedelta(seconds=7200))]


def test_init_takes_the_timeout_and_backend_asked(fake, torchrun_env, monkeypatch):
    torchrun_env(SCANSNAP_DIST_TIMEOUT="90.5", SCANSNAP_DIST_BACKEND="nccl", RANK="2", LOCAL_RANK="1")
    fd = fake(2, 3)
    assert distributed.init("cpu") == (World(2, 3, 1, "nccl"), "cpu")
    assert fd.calls == [("init_process_group", "nccl", 2, 3, datetime.timedelta(seconds=90.5))]


def test_init_refuses_an_unknown_backend_or_timeout_by_name(fake, torchrun_env):
    torchrun_env(SCANSNAP_DIST_BACKEND="mpi")
    fd = fake(1, 3)
    with pytest.raises(ValueError, match=r"^SCANSNAP_DIST_BACKEND='mpi': use one of \('gloo', 'nccl'\)$"):
        distributed.init("cpu")
    torchrun_env(SCANSNAP_DIST_BACKEND="", SCANSNAP_DIST_TIMEOUT="soon")
    with pytest.raises(ValueError, match=r"^SCANSNAP_DIST_TIMEOUT must be a number of seconds, got 'soon'$"):
        distributed.init("cpu")
    assert fd.calls == []


def test_init_on_gpus_takes_nccl_and_the_ranks_own_gpu(fake, torchrun_env, monkeypatch):
    """CUDA faked: the device rule and the backend, not a GPU, are what is checked."""
    torchrun_env(RANK="1", LOCAL_RANK="1")
    fd = fake(1, 3)
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: chosen.append(d))
    assert distributed.init("auto") == (World(1, 3, 1, "nccl"), "cuda:1")
    assert chosen == [torch.device("cuda", 1)]
    assert fd.calls == [("init_process_group", "nccl", 1, 3, datetime.timedelta(seconds=7200))]


def test_a_world_is_main_on_rank_0_and_records_the_launcher(monkeypatch):
    """The record's torchrun line: one machine (--standalone) and the world size a machine when
    torchrun's LOCAL_WORLD_SIZE and GROUP_WORLD_SIZE are absent or empty; the command line is
    this process's own by default (test_research_trust.py checks the variables given)."""
    w = World(0, 4, 0, "gloo")
    assert w.main and not World(1, 4, 1, "gloo").main
    monkeypatch.setattr(sys, "argv", ["/x/scansnap/__main__.py", "reproduce", "fig7"])
    for env in ({}, {"LOCAL_WORLD_SIZE": "", "GROUP_WORLD_SIZE": ""}):
        assert w.record(environ=env) == {
            "launcher": "torchrun --standalone --nproc_per_node 4",
            "command": "torchrun --standalone --nproc_per_node 4 -m scansnap reproduce fig7",
            "world_size": 4, "backend": "gloo"}
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    monkeypatch.setenv("GROUP_WORLD_SIZE", "2")
    assert World(3, 6, 0, "nccl").record(["reproduce", "--out", "a b"]) == {
        "launcher": "torchrun --nnodes 2 --nproc_per_node 3",
        "command": "torchrun --nnodes 2 --nproc_per_node 3 -m scansnap reproduce --out 'a b'",
        "world_size": 6, "backend": "nccl"}


class Flushed(io.StringIO):
    flushes = 0

    def flush(self):
        self.flushes += 1
        super().flush()


def test_say_prints_on_rank_0_only_and_flushes_what_it_printed_to(monkeypatch):
    out = Flushed()
    monkeypatch.setattr(sys, "stdout", out)
    distributed.say(None, "a", 1, sep="-")
    distributed.say(World(0, 2, 0, "gloo"), "b")
    distributed.say(World(1, 2, 1, "gloo"), "c")
    assert out.getvalue() == "a-1\nb\n" and out.flushes == 2
    err = Flushed()
    distributed.say(World(0, 2, 0, "gloo"), "note", file=err)
    assert err.getvalue() == "note\n" and err.flushes == 1 and out.flushes == 2


def test_device_for_gives_each_rank_its_own_gpu(monkeypatch):
    """CUDA faked (2 GPUs): the rule, on any machine."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert distributed.device_for("auto", 0) == torch.device("cuda", 0)
    assert distributed.device_for("cuda", 1) == torch.device("cuda", 1)
    assert distributed.device_for("cpu", 5) == torch.device("cpu")
    with pytest.raises(ValueError, match=r"^local rank 2 has no GPU of its own: this machine has 2; "
                                         r"start at most 2 processes a machine \(--nproc_per_node 2\)$"):
        distributed.device_for("cuda", 2)
    with pytest.raises(ValueError, match=r"^--device cuda:0 under torchrun: use --device cuda \(each rank takes "
                                         r"the GPU numbered by its LOCAL_RANK\), cpu or auto$"):
        distributed.device_for("cuda:0", 0)


def test_device_for_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert distributed.device_for("auto", 3) == torch.device("cpu")
    with pytest.raises(ValueError, match=r"^--device cuda asked for, but CUDA is not available here$"):
        distributed.device_for("cuda", 0)
