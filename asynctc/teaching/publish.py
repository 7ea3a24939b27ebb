"""Slides and the course site, from the learner notebooks (placeholder; filled in below)."""
COMMANDS: dict = {}


def add_commands(sub) -> None:
    return None
