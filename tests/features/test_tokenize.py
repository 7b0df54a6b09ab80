from __future__ import annotations

from models.features.tokenize import Analyzer


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
