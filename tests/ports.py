"""Ports for tests that serve, or must find nobody serving."""

import socket


def unused_port() -> int:
    """A loopback port free at the time of asking: the kernel's pick for a socket closed at once,
    so nothing listens there until the test puts something there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
