"""The custom search attributes Respawn sets on each incident, for the Temporal Web UI
and `respawn override` (the sandbox registers them; a production namespace needs them too)."""

from temporalio.common import SearchAttributeKey

JOB_ID = SearchAttributeKey.for_keyword("RespawnJobId")
CLUSTER = SearchAttributeKey.for_keyword("RespawnCluster")
FAILURE_CLASS = SearchAttributeKey.for_keyword("RespawnFailureClass")
PHASE = SearchAttributeKey.for_keyword("RespawnPhase")
