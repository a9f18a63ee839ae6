"""The Slurm adapter: one interface (`Slurm`, slurm.py) over two transports (local, ssh: transport.py), typed
errors (errors.py), the recovery actions written once (actions.py), states (states.py), the JSON readers."""
