"""The Recovery Console: one page that shows every job, incident and timeline, and takes overrides."""

from respawn.surfaces.console.api import router

__all__ = ["router"]
