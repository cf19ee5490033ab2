// The graphql-http server audit (GraphQL over HTTP spec conformance) against a running
// server: `node audit.mjs http://127.0.0.1:8000/graphql` prints one JSON array of
// {id, name, status, reason} on stdout; tests/api/test_api_http_audit.py asserts on it.
import { auditServer } from 'graphql-http';

const url = process.argv[2];
const results = await auditServer({ url });
const summary = results.map(({ id, name, status, reason }) => ({ id, name, status, reason: reason ?? null }));
process.stdout.write(JSON.stringify(summary) + '\n');
