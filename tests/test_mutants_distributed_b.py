"""scansnap.distributed.from_env pinned to its end (issue 28's mutation testing): torchrun's
variables half set (one of RANK / WORLD_SIZE: an error naming the missing one, not "outside
torchrun"), LOCAL_RANK absent (0), the message word for word. In-process, no torchrun."""
import pytest

from scansnap.distributed import from_env

HINT = "(set by torchrun: start with `torchrun --nproc_per_node N -m scansnap ...`)"


def test_outside_torchrun_only_when_both_rank_and_world_size_are_absent():
    assert from_env({}) is None
    assert from_env({"LOCAL_RANK": "3", "world_size": "2", "rank": "1"}) is None   # names are upper case
    with pytest.raises(ValueError) as e:
        from_env({"WORLD_SIZE": "2"})
    assert str(e.value) == f"RANK=None is not an integer {HINT}"
    with pytest.raises(ValueError) as e:
        from_env({"RANK": "1"})
    assert str(e.value) == f"WORLD_SIZE=None is not an integer {HINT}"


def test_local_rank_defaults_to_zero():
    assert from_env({"RANK": "1", "WORLD_SIZE": "2"}) == (1, 2, 0)
    assert from_env({"RANK": "1", "WORLD_SIZE": "3", "LOCAL_RANK": "2"}) == (1, 3, 2)


def test_malformed_value_message_word_for_word():
    with pytest.raises(ValueError) as e:
        from_env({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "x"})
    assert str(e.value) == f"LOCAL_RANK='x' is not an integer {HINT}"
