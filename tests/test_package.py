"""The package's import-time defaults."""
import os
import subprocess
import sys


def _policy(env_policy):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_policy is not None:
        env["OMP_WAIT_POLICY"] = env_policy
    out = subprocess.run([sys.executable, "-c", "import os, scansnap; print(os.environ['OMP_WAIT_POLICY'])"],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_openmp_threads_sleep_unless_the_caller_says_otherwise():
    """Importing scansnap (before torch, as the chapters do) makes torch's OpenMP threads wait
    passively: spinning threads make small steps several times slower on a busy machine."""
    assert _policy(None) == "PASSIVE"
    assert _policy("ACTIVE") == "ACTIVE"
