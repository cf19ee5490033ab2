"""The GraphQL API over a loaded graph (memory or Neo4j), served by uvicorn.

Modules, outermost first: ``serve`` (the ``pith-graph serve`` command), ``protocols``
(uvicorn with a deadline on request headers), ``app`` (the Starlette app: ``/graphql``,
GraphiQL, ``/healthz``), ``health`` (the bounded health check), ``loops`` (executions off
the event loop), ``settings`` (the environment), ``schema`` (the root ``Query``), ``types``
(object types), ``context`` (per-request DataLoaders over a
:class:`~pith_graph.api.reads.records.GraphReader`), ``ids`` (pasted identifiers),
``limits``, ``cost`` (the query cost limit) and ``coded_errors``. ``schema.graphql`` is the
printed SDL.
"""
