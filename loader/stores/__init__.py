"""Graph stores: the in-memory networkx store and the Neo4j store, behind one seam."""
