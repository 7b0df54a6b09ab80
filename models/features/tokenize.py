"""The analyzer that turns topic and document text into index terms.

One analyzer is used for queries and documents alike, so a query term matches a document term
exactly when both come from the same surface word family:

1. Unicode NFKC normalisation, then lower-casing (``str.lower``), so "ＢＭ２５" and "bm25" agree;
2. word splitting with a Unicode-aware pattern: a word is a run of letters or digits in any script
   (``[^\\W_]``, so ``_`` and punctuation split words), with inner apostrophes kept ("don't",
   "o'brien"); the typographic apostrophe ’ is read as ';
3. stop words removed: the English list of the ``stop-words`` package (1,333 words; it is a broad
   list: besides function words it holds e.g. "information", "research", "system", "new"). Pass
   ``stopwords=`` to use another set, or an empty set to keep every word;
4. Snowball English ("Porter2") stemming from ``snowballstemmer``; stemming also strips a
   possessive 's. Stems are cached per surface word (a collection's vocabulary is small next to its
   token count).

Numbers are kept as words. Words that stem to the empty string are dropped.

Words longer than ``MAX_WORD_CHARS`` (64) are dropped before stop words and stemming, like
stop words: they are not index terms and do not count in a document's length. The Snowball
stemmer's time grows faster than linearly in a word's length (a 640,000-character run of
letters took 38 s, five megabytes would take hours), so one such run in a document could hold a
feature build for hours; with the bound, analysing a text costs time linear in its length.
64 characters keep every dictionary word (the longest English one,
"pneumonoultramicroscopicsilicovolcanoconiosis", has 45 letters; the German law name
"rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz" 63), while longer runs of
letters and digits are base64, hex dumps, hashes or markup debris that no query shares. Dropped
rather than cut to 64 characters: a cut prefix is no word either, and would make two unrelated
blobs with a common prefix match each other.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

import snowballstemmer
from stop_words import get_stop_words

# A word: letters/digits of any script, inner apostrophes allowed ("don't", "o'brien").
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

# The longest surface word that becomes a term (see the module docstring: why, and why 64).
MAX_WORD_CHARS = 64


class Analyzer:
    """Text -> index terms: NFKC, lower case, Unicode words, stop words, Snowball stems.

    ``terms(text)`` gives the terms in order; ``counts(text)`` a ``Counter`` of terms, the form the
    index uses (counting surface words first is much faster than stemming every token).
    """

    def __init__(
        self,
        *,
        language: str = "english",
        stopwords: Iterable[str] | None = None,
        stem: bool = True,
    ) -> None:
        self.language = language
        self.stem = stem
        if stopwords is None:
            stopwords = get_stop_words(language)
        self.stopwords = frozenset(_normalise(w) for w in stopwords)
        self._stemmer = snowballstemmer.stemmer(language) if stem else None
        self._cache: dict[str, str | None] = {}

    def words(self, text: str) -> list[str]:
        """Normalised, lower-cased surface words of at most ``MAX_WORD_CHARS`` characters, stop
        words included (longer runs are dropped: they are no words, and stemming them costs
        more than linear time)."""
        return [w for w in _WORD.findall(_normalise(text)) if len(w) <= MAX_WORD_CHARS]

    def term(self, word: str) -> str | None:
        """The index term of one surface word, or None for a stop word or a word longer than
        ``MAX_WORD_CHARS`` (never stemmed)."""
        if len(word) > MAX_WORD_CHARS:
            return None
        try:
            return self._cache[word]
        except KeyError:
            pass
        if word in self.stopwords:
            out = None
        else:
            out = self._stemmer.stemWord(word) if self._stemmer is not None else word
            out = out or None
        self._cache[word] = out
        return out

    def terms(self, text: str) -> list[str]:
        out = []
        for word in self.words(text):
            term = self.term(word)
            if term is not None:
                out.append(term)
        return out

    def counts(self, text: str) -> Counter[str]:
        """Term frequencies of one text (surface words counted in C first, then stemmed)."""
        out: Counter[str] = Counter()
        for word, n in Counter(self.words(text)).items():
            term = self.term(word)
            if term is not None:
                out[term] += n
        return out


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").lower()
