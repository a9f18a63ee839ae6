"""Detection: which jobs are watched, what in their signals is trouble, and when it is an interruption."""
