"""The cluster configuration and the one way Respawn reads its YAML."""
