"""The GraphQL API over a loaded graph (memory or Neo4j), served by uvicorn.

Modules, outermost first: ``serve`` (the ``pith-graph serve`` command), ``workers`` (serving
processes sharing one socket), ``protocols`` (uvicorn with a deadline on request headers),
``app`` (the Starlette app: ``/graphql``, GraphiQL, ``/healthz``), ``planned`` (POSTs answered
by a plan), ``health`` (the bounded health check), ``loops`` (executions off the event loop),
``settings`` (the environment), ``schema`` (the root ``Query``), ``plan`` (documents compiled
into execution plans that answer without the resolvers), ``types`` (object types),
``context`` (per-request DataLoaders over a
:class:`~pith_graph.api.reads.reader.GraphReader`), ``ids`` (pasted identifiers), ``inputs``
(arguments), ``author_pages`` (a paper's authors after a name key), ``limits``, ``cost`` (the
query cost limit) and ``coded_errors``. ``schema.graphql`` is the printed SDL.
"""
