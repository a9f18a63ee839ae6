"""The advisor transport: advice for a cluster's own controller, and the reference controller."""
