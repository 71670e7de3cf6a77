"""A helper module with global state: each rank must see its own copy."""

OWNER = None
COUNT = 0


def claim(rank):
    global OWNER, COUNT
    OWNER = rank
    COUNT += 1
    return OWNER
