"""The GraphQL API over a loaded graph (memory or Neo4j), served by uvicorn.

Modules, outermost first: ``serve`` (the ``pith-graph serve`` command), ``app`` (the
Starlette app: ``/graphql``, GraphiQL, ``/healthz``), ``settings`` (the environment),
``schema`` (the root ``Query``), ``plan`` (documents compiled into execution plans that
answer without the resolvers), ``types`` (object types), ``context`` (per-request
DataLoaders over a :class:`~pith_graph.api.reads.reader.GraphReader`), ``ids`` (pasted
identifiers), ``inputs`` (arguments), ``limits`` and ``errors``. ``schema.graphql`` is the
printed SDL.
"""
