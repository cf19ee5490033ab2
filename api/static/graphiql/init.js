// Starts GraphiQL against this server's /graphql (served locally: no CDN is needed).
(function () {
  "use strict";
  var endpoint = window.location.pathname.replace(/\/+$/, "") || "/graphql";
  var fetcher = GraphiQL.createFetcher({ url: endpoint });
  var defaultQuery = [
    "# pith-graph: look a paper up by any identifier (pith number, arXiv id, DOI).",
    "# Press the run button (or Ctrl-Enter).",
    "{",
    '  paper(id: "arXiv:1907.13257") {',
    "    title",
    "    pithNumber",
    "    submittedAt",
    "    authors { name }",
    "    categories { code }",
    "  }",
    "}",
    "",
  ].join("\n");
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: defaultQuery,
      defaultEditorToolsVisibility: true,
      shouldPersistHeaders: false,
    })
  );
})();
