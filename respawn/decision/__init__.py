"""Decision: what to do about an incident, from the runbook, the job's history and each node's record (pure)."""
