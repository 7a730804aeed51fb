"""The Markdown section every benchmark prints for bench/results.py."""

import shlex
import sys


def command():
    """The benchmark's own command line, as a reader would retype it (from
    the repository's top: benchmarks run as modules of bench)."""
    return shlex.join(["python3", "-m", sys.modules["__main__"].__spec__.name] + sys.argv[1:])


def print_section(title, intro, rows):
    """rows: (figure, value) with this run's command, or (figure, value,
    command) where a figure came from another command."""
    print(f"## {title}\n\n{intro}\n")
    print("| figure | value | command |\n| --- | --- | --- |")
    for row in rows:
        figure, value, *cmd = row
        print(f"| {figure} | {value} | {cmd[0] if cmd else '`' + command() + '`'} |")
