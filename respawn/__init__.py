"""Respawn: automatic recovery of distributed AI training jobs."""
