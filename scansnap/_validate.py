"""Early, named checks on user input: bad input gets a clear error naming the value, never a NaN later."""
from __future__ import annotations

import math

import torch


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


def resolve_device(device) -> torch.device:
    """'auto' picks CUDA when present; anything else must name a usable device."""
    if isinstance(device, torch.device):
        dev = device
    elif device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(
                f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'"
            ) from None
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but CUDA is not available here")
    return dev
