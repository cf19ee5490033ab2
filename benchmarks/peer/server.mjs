// The peer of benchmarks/bench_peer.py: @neo4j/graphql 7 on Apollo Server's standalone HTTP
// server, serving pith-graph's Neo4j graph read-only, the way a frontend team would set it up.
//
//   NEO4J_URI=bolt://127.0.0.1:7687 PORT=4000 node benchmarks/peer/server.mjs
//
// Environment: NEO4J_URI, NEO4J_USER (neo4j), NEO4J_PASSWORD (unset: no auth), NEO4J_DATABASE
// (neo4j), HOST (127.0.0.1), PORT (4000). Prints "READY <url>" once it accepts requests; stops
// on SIGTERM/SIGINT.
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";
import { Neo4jGraphQL } from "@neo4j/graphql";
import neo4j from "neo4j-driver";

import { typeDefs } from "./typedefs.mjs";

const uri = process.env.NEO4J_URI ?? "bolt://127.0.0.1:7687";
const password = process.env.NEO4J_PASSWORD;
const auth = password ? neo4j.auth.basic(process.env.NEO4J_USER ?? "neo4j", password) : undefined;
const database = process.env.NEO4J_DATABASE ?? "neo4j";
const host = process.env.HOST ?? "127.0.0.1";
const port = Number(process.env.PORT ?? 4000);

// The driver's defaults (a pool of up to 100 connections), as in the library's examples.
const driver = neo4j.driver(uri, auth);
await driver.verifyConnectivity();

const neoSchema = new Neo4jGraphQL({ typeDefs, driver });
const server = new ApolloServer({ schema: await neoSchema.getSchema() });
const { url } = await startStandaloneServer(server, {
    listen: { host, port },
    // Every request reads the one database (the library runs queries as read transactions).
    context: async () => ({ sessionConfig: { database } }),
});
console.log(`READY ${url}`);

async function stop() {
    await server.stop();
    await driver.close();
    process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
