"""Early, named checks on user input: bad input gets a clear error naming the value, never a NaN later.

Also the one place that decides which device a trainer uses when it is not told
(:func:`resolve_device` with ``device=None``): the process-wide default of
:func:`set_default_device`, ``"auto"`` unless set. ``scansnap.book`` states the rule the
chapters follow.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import torch

_DEVICE_HELP = "use 'auto', 'cpu', 'cuda' or 'cuda:N'"
_default_device = "auto"


def positive(name: str, value) -> float:
    """A strictly positive finite number, else ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        shown = value if isinstance(value, (str, int)) and not hasattr(value, "dtype") else v
        raise ValueError(f"{name} must be a positive number, got {shown!r}")
    return v


def positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):   # ints, numpy ints; not floats
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v


def integer(name: str, value) -> int:
    """An integer (a Python or numpy int, not a float or bool), else ValueError naming it."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


SEED_MIN, SEED_MAX = -2 ** 63, 2 ** 63 - 1     # what torch's generators and an int64 grid hold


def seed(name: str, value) -> int:
    """An integer seed that a signed 64-bit integer holds (torch's generators, the int64 grid
    of runs), else ValueError naming it: 2**64 - 1 must not wrap to -1 on the way."""
    v = integer(name, value)
    if not SEED_MIN <= v <= SEED_MAX:
        raise ValueError(f"{name} must be an integer in [-2**63, 2**63 - 1] (a signed 64-bit integer), "
                         f"got {value!r}")
    return v


def array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array, else ValueError naming it (ragged rows, text, None)."""
    if value is None:               # np.asarray(None, float) is nan: refuse it as None, by name
        raise ValueError(f"{name} must be an array of numbers, got None")
    try:
        return np.asarray(value, float)
    except (TypeError, ValueError):
        pass
    try:
        shapes = {np.shape(row) for row in value}
    except TypeError:
        shapes = set()
    if len(shapes) > 1:
        raise ValueError(f"{name} must be a rectangular array of numbers; its rows have different "
                         f"lengths ({sorted(shapes)})")
    raise ValueError(f"{name} must be an array of numbers, got {value!r}")


def times(name: str, value, empty_ok: bool = False) -> np.ndarray:
    """Times (or steps) as a float64 array of finite numbers >= 0 (non-empty unless
    ``empty_ok``), else ValueError naming the first bad one as given."""
    t = array(name, value)
    if t.size == 0 and not empty_ok:
        raise ValueError(f"{name} is empty: give at least one time")
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        v = float(t[bad].ravel()[0])
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return t


def distribution_rows(name: str, value) -> np.ndarray:
    """Rows of probabilities (the last axis): finite, >= 0, each with some positive mass, else
    ValueError naming the row. (A row need not sum to 1 where the caller normalises it.)"""
    p = array(name, value)
    if p.ndim == 0 or p.shape[-1] == 0:
        raise ValueError(f"{name} must be a row of probabilities, got shape {p.shape}")
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must hold probabilities (finite, >= 0): {float(p[idx])!r} at index {idx}")
    empty = ~(p.sum(-1) > 0)
    if np.any(empty):
        idx = tuple(int(i) for i in np.argwhere(np.atleast_1d(empty))[0]) if p.ndim > 1 else ()
        raise ValueError(f"{name}: row {idx} has no probability mass (every entry is 0)" if idx else
                         f"{name} has no probability mass (every entry is 0)")
    return p


def unit_interval(name: str, value) -> float:
    """A number in [0, 1) (momentum, Adam's betas), else ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}") from None
    if not 0 <= v < 1:          # False for NaN too
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return v


def finite(name: str, a, runs: bool = False) -> np.ndarray:
    """``a`` as a float64 array with no NaN or inf, else ValueError naming where.

    With ``runs=True`` the leading axis indexes runs and the message names the run: a
    diverged run must read as diverged, never as a number.
    """
    if torch.is_tensor(a) and a.is_complex() or not torch.is_tensor(a) and np.iscomplexobj(a):
        raise ValueError(f"{name} must be real, got a complex array")
    x = a.detach().cpu().double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a, float)
    bad = ~np.isfinite(x)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"run {idx[0]}" if runs and x.ndim >= 1 else f"index {idx}"
        raise ValueError(f"{name} is not finite at {where} ({x[idx]!r}; {int(bad.sum())} of {x.size} "
                         "values): a diverged run has no meaningful value")
    return x


# ---------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------

def set_default_device(device) -> str:
    """Set the device that ``device=None`` means everywhere in the package; returns the old one.

    ``device`` is ``"auto"`` (CUDA when present, else the CPU), ``"cpu"``, ``"cuda"`` or
    ``"cuda:N"``; it is checked now (an unknown or unusable device raises here).
    """
    global _default_device
    if device is None:
        raise ValueError(f"the default device cannot be None: {_DEVICE_HELP}")
    resolve_device(device)
    old = _default_device
    _default_device = device if device == "auto" else str(resolve_device(device))
    return old


def get_default_device() -> str:
    """What ``device=None`` means now (``"auto"`` unless :func:`set_default_device` changed it)."""
    return _default_device


@contextlib.contextmanager
def default_device(device):
    """``with default_device("auto"): ...``: ``device=None`` means ``device`` inside the block."""
    old = set_default_device(device)
    try:
        yield get_default_device()
    finally:
        set_default_device(old)


def resolve_device(device) -> torch.device:
    """``None``: the process default (:func:`get_default_device`). ``'auto'`` picks CUDA when
    present; anything else must name a usable device."""
    if device is None:
        device = _default_device
    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"unknown device {device!r}: {_DEVICE_HELP}") from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}: {_DEVICE_HELP}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available here")
    return dev
