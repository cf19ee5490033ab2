"""``python -m pith_graph``: the ``pith-graph`` command line."""

from pith_graph.cli import entry

entry()
