"""What operators use: the CLI, the server and console, status, Respawn's own telemetry, overrides."""
