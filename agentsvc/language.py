"""Word forms: an agent's language and the Snowball stemmer that folds its word forms.

"ships", "shipping" and "shipped" all stem to "ship", so a question matches a sentence that
uses another form of its words. Stemming a word costs tens of microseconds in pure Python,
so stemmers are made once per language and each (language, word) is stemmed once (LRU).
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

from agentsvc.stopwords import STOP_WORDS

DEFAULT_LANGUAGE = "english"
# Snowball's languages; "porter" and "dutch_porter" are older algorithms, not languages.
LANGUAGES: tuple[str, ...] = tuple(
    sorted(set(snowballstemmer.algorithms()) - {"porter", "dutch_porter"})
)
assert DEFAULT_LANGUAGE in LANGUAGES

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
# "check-out", "Wi-Fi", "e-mail": also matched as one word ("checkout", "wifi", "email").
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+", re.UNICODE)
_UNDOUBLED = frozenset("bdfgmnprt")
_STEMMERS: dict[str, snowballstemmer.stemmer] = {}
STEM_CACHE_SIZE = 50_000  # distinct (language, word) pairs: a few MB at most


def _stemmer(language: str) -> snowballstemmer.stemmer:
    found = _STEMMERS.get(language)
    if found is None:
        found = _STEMMERS[language] = snowballstemmer.stemmer(language)
    return found


@lru_cache(maxsize=STEM_CACHE_SIZE)
def stem(word: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The stem of a lower-cased word in the language (the word itself for an unknown one)."""
    if language not in LANGUAGES or len(word) > 64:
        return word  # a 10 kB "word" is not worth stemming, nor keeping in the cache as one
    found = _stemmer(language).stemWord(word)
    if language == "english" and len(found) > 2 and found[-1] == found[-2] in _UNDOUBLED:
        # Porter2 undoubles "staffed" to "staf" but keeps "staff": undouble both.
        found = found[:-1]
    return found


def stems(text: str, language: str = DEFAULT_LANGUAGE, limit: int = 0) -> frozenset[str]:
    """The distinct stems of a text's words, common stop words left out.

    With `limit`, only the first `limit` distinct words count (a visitor's 100 kB question
    must not cost a second of stemming on the event loop).
    """
    lowered = text.lower()
    words: dict[str, None] = {}
    for match in _WORD.finditer(lowered):
        word = match.group(0)
        if word not in STOP_WORDS:
            words[word] = None
            if len(words) == limit:
                break
    if "-" in lowered:
        for match in _HYPHENATED.finditer(lowered):
            if limit and len(words) >= limit:
                break
            words[match.group(0).replace("-", "")] = None
    # Numbers (order numbers, prices, years) stem to themselves in every language but
    # Arabic's digits, so ASCII ones skip the stemmer and do not crowd its cache.
    return frozenset(w if w.isascii() and w.isdigit() else stem(w, language) for w in words)
