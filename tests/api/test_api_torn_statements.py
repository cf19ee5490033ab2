"""Every read statement, as Neo4j plans it, reads a paper's stamp before its relations and
again after them.

Neo4j's READ COMMITTED holds within a statement too: each read sees what was committed
before it. Neo4j plans the subqueries of a projection (a paper's authors, categories,
aliases, signers) before the projection, so a statement that read the stamp with the paper's
properties read it *after* the authors: a load committed in between showed a paper's title,
digest and aliases from one bundle and its authors from the one before, with that bundle's
stamp. CI saw it once (a category page over HTTP, ``test_api_torn_reads.py``); a stress run
(two request readers listing 100 papers with their authors while 240 one-paper transactions
replaced them) saw 5 torn papers in 2,899 pages over 5 runs.

So each statement reads the stamp in a WITH of its own right after it finds the paper
(``cypher_parts.stamp_before``) and again at the end, by variable property names that Neo4j
cannot answer from the first read (``cypher_parts.stamp``); the reader refuses a paper whose
two reads differ (``Neo4jBase.check_stamp``). What is checked here is the order Neo4j gives
those reads in each statement's plan: the test fails if a planner rewrite inlines the first
read into the last projection, or moves it after a subquery.
"""

from __future__ import annotations

import re

import pytest
from apitest import corpus, memory_reader, neo4j_corpus, neo4j_reader  # noqa: F401 (fixtures)
from conftest import plan_steps

from pith_graph.api.reads import cypher
from pith_graph.api.reads.neo4j import Neo4jReader

pytestmark = pytest.mark.neo4j

#: Every statement that finds papers and reads their stamps, by name and variant.
EVERY = {
    f"{name}[{variant}]": statement
    for name, value in vars(cypher).items()
    if name.startswith("READ_")
    for variant, statement in (value.items() if isinstance(value, dict) else [("", value)])
    if "Before" in statement
}
#: Those planned here: of each kind (a listing: of each start), the variant that embeds and
#: counts the most (its last), which has every subquery the others have. All 115 take a
#: minute and a quarter to plan on a fresh server with the C1 compiler; these, 10 s.
STATEMENTS = {
    name: EVERY[name] for name in EVERY if name.endswith(("(True, True))]", "(True, True)]", "[True]", "[]"))
}


def _runs_before(first: tuple[int, ...], then: tuple[int, ...]) -> bool:
    """Whether, for a row, the step at ``first`` runs before the step at ``then``: it is below
    it (it feeds it), or on the left of the operator where their paths part (an Apply runs
    its right-hand side for each row its left-hand side produced)."""
    if first[: len(then)] == then:
        return True
    if then[: len(first)] == first:
        return False
    parted = next(i for i, (a, b) in enumerate(zip(first, then, strict=False)) if a != b)
    return first[parted] < then[parted]


def test_the_statements_read_papers_and_their_stamps() -> None:
    names = {name.split("[")[0] for name in STATEMENTS}
    assert names == {name.split("[")[0] for name in EVERY}
    assert {"READ_PAPERS", "READ_LIST_PAPERS", "READ_PAPERS_OF_CATEGORIES", "READ_ALIASES_OF_PAPERS"} <= names
    # a later page of related papers (since 0.9.2) reads the paper's and each page paper's stamp
    assert {"READ_RELATED_PAPERS", "READ_RELATED_PAPERS_AFTER"} <= names
    starts = {name.split("'")[1] for name in STATEMENTS if name.startswith("READ_LIST_PAPERS")}
    assert starts == {"title", "author", "authors", "category", "categories", "archive", "all"}
    oldest = {name.split("[")[1] for name in STATEMENTS if name.startswith("READ_LIST_PAPERS_OLDEST")}
    assert oldest == {name.split("[")[1] for name in STATEMENTS if name.startswith("READ_LIST_PAPERS[")}
    # an author's, a category's, a signer's pages oldest first (since 0.9.3)
    nested = {name for name in names if name.startswith("READ_PAPERS_OF_")}
    assert {name for name in nested if name.endswith("_OLDEST")} == {
        f"{name}_OLDEST" for name in nested if not name.endswith("_OLDEST")
    }
    assert len(EVERY) > 100 and 15 <= len(STATEMENTS) < 40, sorted(STATEMENTS)


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_a_paper_s_stamp_is_read_before_its_relations_and_after(name: str, neo4j_reader: Neo4jReader) -> None:
    """For each paper variable ``v``: one step reads ``_vBefore``, a later one the stamp again,
    and each relation of ``v`` the statement reads after finding it (its text after the
    WITH of ``_vBefore``) is read between the two."""
    statement = STATEMENTS[name]
    parameters = dict.fromkeys(re.findall(r"\$(\w+)", statement))
    plan = neo4j_reader.driver.execute_query("EXPLAIN " + statement, parameters).summary.plan
    steps = list(plan_steps(plan))
    for v in sorted(set(re.findall(r"AS _(\w+)Before", statement))):
        before = [path for path, _, details in steps if f"AS _{v}Before" in details]
        after = [path for path, _, details in steps if f"| {v}[_s]]" in details]
        assert len(before) == 1 and after, (v, before, after)
        returned = [details for path, _, details in steps if f"[_{v}Before, [_s IN " in details]
        assert returned, (v, "the stamp returned is not the one read first", steps)
        relation = re.compile(rf"\({v}\)\s*<?-\[|\]->?\s*\({v}\)")
        asked = len(relation.findall(statement[statement.index(f"AS _{v}Before") :]))
        between = [
            (operator, details)
            for path, operator, details in steps
            if relation.search(details)
            and _runs_before(before[0], path)
            and all(_runs_before(path, then) for then in after)
        ]
        assert len(between) >= asked, (v, asked, between, steps)
