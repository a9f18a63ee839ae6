"""Fakes of servers that do not run here, each written from its documented wire format."""
