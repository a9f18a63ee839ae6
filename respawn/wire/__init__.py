"""The wire: the types that cross the workflow boundary. Nothing here reads storage or the network."""
