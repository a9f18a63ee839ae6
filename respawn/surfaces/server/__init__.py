"""The Respawn HTTP server (`respawn serve`): the Advisor API and, beside it, the console."""
