# The stub of the directory module: it defines nothing a program uses (see __init__.py).
