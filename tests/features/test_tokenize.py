from __future__ import annotations

from models.features.tokenize import MAX_WORD_CHARS, Analyzer


def test_lowercase_stopwords_and_porter2_stems() -> None:
    analyzer = Analyzer()
    assert analyzer.terms("The Running CATS were generalizing") == ["run", "cat", "general"]


def test_unicode_words_and_punctuation() -> None:
    analyzer = Analyzer()
    # NFKC folds full-width letters/digits; accented and non-Latin letters stay in words;
    # punctuation and underscores split words.
    assert analyzer.words("ＢＭ２５, café_au-lait; Ελληνικά!") == [
        "bm25", "café", "au", "lait", "ελληνικά"
    ]


def test_apostrophes_and_possessives() -> None:
    analyzer = Analyzer()
    assert analyzer.words("Don’t O'Brien") == ["don't", "o'brien"]
    assert analyzer.terms("don't") == []  # an English stop word
    assert analyzer.terms("the dog's bone") == ["dog", "bone"]


def test_stop_word_list_is_the_packages_english_list() -> None:
    from stop_words import get_stop_words

    assert Analyzer().stopwords == frozenset(get_stop_words("english"))


def test_custom_stop_words_and_no_stemming() -> None:
    analyzer = Analyzer(stopwords=[], stem=False)
    assert analyzer.terms("The running cats") == ["the", "running", "cats"]


def test_counts_merge_surface_forms_of_one_stem() -> None:
    assert Analyzer().counts("cat cats Cat dog") == {"cat": 3, "dog": 1}


def test_numbers_are_words() -> None:
    assert Analyzer().terms("trec 2010 track") == ["trec", "2010", "track"]


class RecordingStemmer:
    """Wraps the analyzer's Snowball stemmer and keeps every word it is asked to stem."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def stemWord(self, word: str) -> str:  # noqa: N802 (snowballstemmer's name)
        self.seen.append(word)
        return self.inner.stemWord(word)  # type: ignore[attr-defined, no-any-return]


def recording_analyzer() -> tuple[Analyzer, RecordingStemmer]:
    analyzer = Analyzer()
    stemmer = RecordingStemmer(analyzer._stemmer)
    analyzer._stemmer = stemmer  # type: ignore[assignment]
    return analyzer, stemmer


def test_words_over_the_bound_are_dropped_and_never_stemmed() -> None:
    analyzer, stemmer = recording_analyzer()
    at_bound = "b" * MAX_WORD_CHARS
    text = f"bears {'y' * 1_000_000} {at_bound} {'z' * (MAX_WORD_CHARS + 1)} running"
    assert analyzer.words(text) == ["bears", at_bound, "running"]
    assert analyzer.terms(text) == ["bear", at_bound, "run"]
    assert analyzer.counts(text) == {"bear": 1, at_bound: 1, "run": 1}
    assert analyzer.term("y" * 1_000_000) is None  # asked directly: not stemmed either
    assert stemmer.seen and max(map(len, stemmer.seen)) <= MAX_WORD_CHARS


def test_the_bound_keeps_the_longest_dictionary_words() -> None:
    english = "pneumonoultramicroscopicsilicovolcanoconiosis"
    german = "Rindfleischetikettierungsüberwachungsaufgabenübertragungsgesetz"
    assert Analyzer(stem=False).terms(f"{english} {german}") == [english, german.lower()]
