// The peer's view of pith-graph's Neo4j graph (schema/graph.py): same labels, properties and
// relationship types, read-only (no mutations, no subscriptions).
export const typeDefs = /* GraphQL */ `
    type Paper @node(labels: ["Paper"]) @mutation(operations: []) @subscription(events: []) {
        pithNumber: String!
        shortPithNumber: String!
        title: String!
        submittedAt: String!
        sourceVersion: Int!
        builtAt: String!
        authors: [Author!]! @relationship(type: "AUTHORED", direction: IN)
        categories: [Category!]! @relationship(type: "IN_CATEGORY", direction: OUT)
        aliases: [Alias!]! @relationship(type: "IDENTIFIES", direction: IN)
    }

    type Author @node(labels: ["Author"]) @mutation(operations: []) @subscription(events: []) {
        nameKey: String!
        name: String!
        papers: [Paper!]! @relationship(type: "AUTHORED", direction: OUT)
    }

    type Category @node(labels: ["Category"]) @mutation(operations: []) @subscription(events: []) {
        code: String!
        archive: String!
        papers: [Paper!]! @relationship(type: "IN_CATEGORY", direction: IN)
    }

    type Alias @node(labels: ["Alias"]) @mutation(operations: []) @subscription(events: []) {
        kind: String!
        value: String!
        papers: [Paper!]! @relationship(type: "IDENTIFIES", direction: OUT)
    }
`;
