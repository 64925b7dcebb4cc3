"""This process's RPC agent (set by ``init_rpc``, cleared by ``shutdown``): the lowest module
of ``rpc/``, so that ``rref.py`` can reach the agent without importing ``agent.py`` (which
imports ``rref.py``)."""

from __future__ import annotations

_STATE: dict = {"agent": None}


def current_agent():
    """The running agent, or None before ``init_rpc`` / after ``shutdown``."""
    return _STATE["agent"]
