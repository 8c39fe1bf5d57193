"""Security tests; the whole-job secrets test runs on the fault tests' isolated stack."""

from tests.faults.stack import (  # noqa: F401  (fixtures)
    fault_broker,
    fault_env,
    fault_llm,
    fault_redis,
    quiet_other_workers,
    stack,
)
