"""PostgreSQL's knowledge retrieval: a bounded set of candidates ranked by `ts_rank`, chosen
from the question's selective words by word statistics this process keeps.

`ts_rank` reads each candidate's tsvector (a few µs, most of it fetching the value from
TOAST), and the GIN index reads every posting of each word it is asked for, so ranking
every passage that holds a word in one passage in ten would cost tens of ms at 100,000
passages. The candidates come from the question's *selective* words: the rarest, whose
passages (in the whole table) add up to SELECTIVE_POSTINGS at most. First the passages
holding two of the question's words, one of them selective (the index reads the selective
words' postings and skips through the others' to those only), at most PAIRS_CANDIDATES;
when they are fewer than PAIRS_ENOUGH, also passages holding any selective word, at most
ANY_CANDIDATES. `ts_rank` then scores them as it would have in a full ranking: a heading
match weighs double (weights are {D, C, B, A}) and the score is divided by 1 + log(length),
as BM25 favours short passages. When every word is selective (a small table) and the
matches fit the caps, the ranking is the full one. The GIN index is on (agent_id, search)
(btree_gin), so only the agent's postings are read past the agent's key.

How common each word is comes from the table's statistics (`pg_stats`: ANALYZE, which
autovacuum runs, keeps the most common lexemes with their shares of the rows), read once
per STATS_SECONDS by each process and kept with each word's lexemes, so a question costs
one round trip. A table ANALYZE has not seen yet (just loaded) has no statistics; rather
than take every word for a rare one (and read the postings of words in half the
passages), the shares are then counted in a sample of the table's pages.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field

from agentsvc.db import Row, Tx

PAIRS_CANDIDATES = 150  # passages holding two of the words (one selective), at most
ANY_CANDIDATES = 50  # passages holding a selective word, at most (when the pairs are few)
# Pairs past which those are not read: each of the benchmark's 1,500 questions got the same
# top 4 either way (those are any 50, not the best 50, and the pairs usually outrank them).
PAIRS_ENOUGH = 100
SELECTIVE_POSTINGS = 3000  # the selective words' passages (in the table) add up to this, at most
STATS_SECONDS = 60.0  # ANALYZE's word statistics are read again after this
SAMPLE_SECONDS = 10.0  # a sample's, while ANALYZE has not run (autovacuum does within minutes)
SAMPLE_PAGES = 300  # pages of the table read to count lexemes when it has no statistics
COMMON_LEXEMES = 1000  # lexemes kept from a sample, as ANALYZE keeps (statistics target 100)
MAX_KNOWN_WORDS = 20_000  # words whose lexemes are kept; forgotten all at once past this

# The candidates, each set in a CTE of its own: a CTE is planned for all its rows, so the
# planner takes the bitmap index scan, where a LIMIT right above the scan made it expect
# the first rows soon from a sequential scan (it read ~1,700 rows for 50, ~5 ms, against
# ~1 ms). A CTE is read on demand, so the LIMITs still stop the heap reads early. The
# passages holding any selective word are read only when the pairs are fewer than
# PAIRS_ENOUGH (a one-time filter, tested before their scan starts). The candidates carry
# their `search` value, so no row is read twice. `{candidates}` is one of the two below,
# `{query}` the words' query, the prefixes' or both (`||`).
_SEARCH = """
WITH any_all AS MATERIALIZED (
    SELECT id, document_id, search FROM passages
    WHERE agent_id = ? AND search @@ ?::text::tsquery),
{candidates},
top AS (
    SELECT DISTINCT c.id, c.document_id, ts_rank('{0, 0, 0.5, 1}', c.search, q.query, 1) AS score
    FROM candidates AS c, (SELECT {query} AS query) AS q
    ORDER BY score DESC, c.id
    LIMIT ?)
SELECT p.id, p.document_id, d.title, p.heading, p.text, top.score, d.source_url
FROM top
JOIN passages AS p ON p.id = top.id
JOIN documents AS d ON d.id = top.document_id
WHERE d.status = 'ready'
ORDER BY top.score DESC, top.id
LIMIT ?
"""
_WITH_PAIRS = """pairs_all AS MATERIALIZED (
    SELECT id, document_id, search FROM passages
    WHERE agent_id = ? AND search @@ ?::text::tsquery),
pairs AS MATERIALIZED (SELECT * FROM pairs_all LIMIT ?),
candidates AS (
    SELECT * FROM pairs
    UNION ALL
    (SELECT * FROM any_all WHERE (SELECT count(*) FROM pairs) < ? LIMIT ?))"""
_ANY_ALONE = "candidates AS (SELECT * FROM any_all LIMIT ?)"
_WORDS = "to_tsquery('english', ?)"
_PREFIXES = "to_tsquery('simple', ?)"

# The lexemes ANALYZE found most common with their shares of the rows, and the table's
# estimated number of rows; no row when the table has not been analyzed.
_STATS = """
SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs,
       (SELECT reltuples FROM pg_class WHERE oid = 'passages'::regclass)
FROM pg_stats AS s
WHERE s.schemaname = current_schema() AND s.tablename = 'passages' AND s.attname = 'search'
"""
# The same from SAMPLE_PAGES pages picked at random (`SYSTEM` reads whole pages, so this
# costs a few tens of ms on any size of table): each lexeme's rows in the sample and the
# share of the table's pages it read (in percent).
_SAMPLE = """
WITH share AS (
    SELECT least(100, ? * 100.0 / greatest(1, pg_relation_size('passages')
           / current_setting('block_size')::int)) AS percent),
sample AS MATERIALIZED (
    SELECT search FROM passages TABLESAMPLE SYSTEM ((SELECT percent FROM share)))
SELECT u.lexeme, count(*), (SELECT percent FROM share)
FROM sample, unnest(tsvector_to_array(sample.search)) AS u(lexeme)
GROUP BY u.lexeme
ORDER BY count(*) DESC, u.lexeme
LIMIT ?
"""
_LEXEMES = """
SELECT w, tsvector_to_array(to_tsvector('english', w)) FROM unnest(?::text[]) AS w
"""


@dataclass
class _WordStats:
    """What one database's reader knows of the words: passages holding each common
    lexeme (in the table; a lexeme not here counts 0) and the lexemes of each word."""

    counts: dict[str, float] = field(default_factory=dict)
    expires: float = float("-inf")  # on time.monotonic()
    lexemes: dict[str, list[str]] = field(default_factory=dict)


# Per reader (one per database), dropped with it.
_STATS_OF: weakref.WeakKeyDictionary[Tx, _WordStats] = weakref.WeakKeyDictionary()


async def search(
    tx: Tx, agent_id: str, words: list[str], prefixes: list[str], k: int, margin: int
) -> list[Row]:
    """The agent's best k passages holding any of the words (any English form) or a word
    starting with one of the prefixes, best first, as `documents.Hit`'s fields."""
    if not words and not prefixes:
        return []
    counts = await lexeme_counts(tx, words) if words else []
    selective, common = selective_words(counts)
    # Prefixes (another language's stems) go with the selective words: they are few.
    selective += [f"{_quoted(p)}:*" for p in prefixes]
    common = [_quoted(w) for w in common]
    if not selective:  # only words the english configuration ignores: nothing matches
        return []
    params: list[object] = [agent_id, " | ".join(selective)]
    pairs = pairs_query(selective, common)
    if pairs:
        params += [agent_id, pairs, PAIRS_CANDIDATES, PAIRS_ENOUGH, ANY_CANDIDATES]
    else:  # one word
        params += [ANY_CANDIDATES]
    parts = []
    if words:
        parts.append(_WORDS)
        params.append(" | ".join(words))
    if prefixes:
        parts.append(_PREFIXES)
        params.append(" | ".join(f"{p}:*" for p in prefixes))
    sql = _SEARCH.replace("{candidates}", _WITH_PAIRS if pairs else _ANY_ALONE)
    sql = sql.replace("{query}", " || ".join(parts))
    return await tx.fetchall(sql, [*params, k + margin, k])


async def lexeme_counts(tx: Tx, words: list[str]) -> list[tuple[str, float]]:
    """(lexeme, passages holding it in the table) for the words' English lexemes."""
    stats = _STATS_OF.get(tx)
    if stats is None:
        stats = _STATS_OF[tx] = _WordStats()
    counts = stats.counts
    if time.monotonic() > stats.expires:
        counts, seconds = await _read_counts(tx)
        stats.counts, stats.expires = counts, time.monotonic() + seconds
    lexemes = {w: stats.lexemes[w] for w in words if w in stats.lexemes}
    unknown = [w for w in words if w not in lexemes]
    if unknown:
        rows = await tx.fetchall(_LEXEMES, (unknown,))
        if len(stats.lexemes) + len(rows) > MAX_KNOWN_WORDS:
            stats.lexemes.clear()
        for word, found in rows:
            lexemes[word] = stats.lexemes[word] = list(found)
    distinct = sorted({lexeme for found in lexemes.values() for lexeme in found})
    return [(lexeme, counts.get(lexeme, 0.0)) for lexeme in distinct]


async def _read_counts(tx: Tx) -> tuple[dict[str, float], float]:
    """Passages holding each common lexeme, by ANALYZE's statistics or else a sample's,
    and for how many seconds to keep them."""
    row = await tx.fetchone(_STATS)
    if row is not None:
        elems, freqs, rows = row
        rows = max(float(rows), 0.0)
        counts = {e: float(f) * rows for e, f in zip(elems or [], freqs or [], strict=False)}
        return counts, STATS_SECONDS
    sample = await tx.fetchall(_SAMPLE, (SAMPLE_PAGES, COMMON_LEXEMES))
    # A lexeme's rows in the sample stand for 100 / percent times as many in the table.
    return {lexeme: float(n) * 100.0 / float(pct) for lexeme, n, pct in sample}, SAMPLE_SECONDS


def _quoted(lexeme: str) -> str:
    """A lexeme as a tsquery operand (quoted: read as that lexeme, never as syntax)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def selective_words(counts: list[tuple[str, float]]) -> tuple[list[str], list[str]]:
    """(selective quoted, common) lexemes from (lexeme, passages holding it in the table):
    the rarest first while they add up to at most SELECTIVE_POSTINGS passages (the rarest
    always), the others common."""
    ordered = sorted(counts, key=lambda pair: (pair[1], pair[0]))
    selective: list[str] = []
    total = 0.0
    for lexeme, count in ordered:
        if selective and total + count > SELECTIVE_POSTINGS:
            break
        selective.append(_quoted(lexeme))
        total += count
    return selective, [lexeme for lexeme, _ in ordered[len(selective) :]]


def pairs_query(selective: list[str], common: list[str]) -> str:
    """The tsquery of passages holding a selective word and any other word ('' if the
    question has one word): the index reads the selective words' postings and looks the
    others up at those only."""
    clauses = []
    for i, word in enumerate(selective):
        others = selective[i + 1 :] + common
        if others:
            clauses.append(f"({word} & ({' | '.join(others)}))")
    return " | ".join(clauses)
