"""Fault and load tests run on their own stack (see stack.py)."""

from tests.faults.stack import (  # noqa: F401  (fixtures)
    fault_broker,
    fault_env,
    fault_llm,
    fault_redis,
    quiet_other_workers,
    stack,
)
