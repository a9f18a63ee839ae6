"""Signal sources: job output and kernel logs, GPU metrics, progress lines, the stopped-task probe."""
