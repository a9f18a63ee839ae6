"""The audit trail and its summaries."""
