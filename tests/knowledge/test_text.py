from research.knowledge.ranking import bm25_scores
from research.knowledge.text import chunk_text, size_units, tokenize


def test_tokenize_english_lowercases_drops_stop_words_and_folds_plurals():
    assert tokenize("The Bees and their Colonies, studies of queens!") == ["bee", "colony", "study", "queen"]
    assert tokenize("TCP/IP packets: 3 duplicate ACKs") == ["tcp", "ip", "packet", "3", "duplicate", "ack"]


def test_tokenize_chinese_uses_character_bigrams():
    assert tokenize("大熊猫吃竹子") == ["大熊", "熊猫", "猫吃", "吃竹", "竹子"]
    # Mixed text: each script is handled its own way, punctuation separates runs.
    assert tokenize("长城 Great Wall。") == ["长城", "great", "wall"]
    assert tokenize("猫") == ["猫"]


def test_tokenize_normalizes_full_width_forms():
    assert tokenize("ＴＣＰ") == ["tcp"]


def _paragraphs(count: int, sentences: int, words: int) -> str:
    return "\n\n".join(
        " ".join(
            f"Para{p} sentence{s} " + " ".join(f"w{p}x{s}x{i}" for i in range(words)) + "." for s in range(sentences)
        )
        for p in range(count)
    )


def test_chunks_are_bounded_end_on_sentences_and_overlap():
    text = _paragraphs(count=10, sentences=6, words=18)  # ~1200 words
    chunks = chunk_text(text)
    assert len(chunks) >= 3
    assert all(size_units(c) <= 400 for c in chunks)
    assert all(size_units(c) >= 200 for c in chunks[:-1])
    assert all(c.endswith(".") for c in chunks)
    for previous, current in zip(chunks, chunks[1:], strict=False):
        first_sentence = current.split(". ")[0]
        assert first_sentence in previous  # the window starts with the tail of the previous one
    # Nothing is lost.
    words = set(text.split())
    assert words <= set(" ".join(chunks).split())


def test_short_text_is_one_chunk_and_empty_text_none():
    assert chunk_text("One short note.") == ["One short note."]
    assert chunk_text("   \n\n  ") == []


def test_cjk_text_is_chunked_by_characters():
    sentence = "大熊猫是中国特有的哺乳动物，主要生活在四川的山区竹林中。"  # 28 characters
    chunks = chunk_text(sentence * 50)
    assert len(chunks) > 2
    assert all(size_units(c) <= 400 for c in chunks)  # CJK characters, punctuation not counted
    assert all(c.endswith("。") for c in chunks)
    assert " " not in chunks[0]  # CJK sentences are joined without spaces

    # A run-on text with no punctuation at all is still cut (by characters) with overlap.
    run_on = "长城" * 700
    pieces = chunk_text(run_on)
    assert all(len(p) <= 400 for p in pieces)
    assert sum(len(p) for p in pieces) > len(run_on)


def test_bm25_prefers_rarer_terms_and_shorter_chunks():
    postings = [(1, "common", 1), (2, "common", 1), (3, "common", 1), (2, "rare", 1), (3, "rare", 1)]
    lengths = {1: 10, 2: 10, 3: 40}
    scores = bm25_scores(
        query_terms=["common", "rare"], postings=postings, lengths=lengths, total_chunks=10, avg_length=20
    )
    assert scores[2] > scores[3] > scores[1]  # both terms beat one; same tf in a shorter chunk beats longer
    assert all(s > 0 for s in scores.values())
    # tf saturates: ten times the occurrences is far less than ten times the score.
    tf_scores = bm25_scores(
        query_terms=["t"], postings=[(1, "t", 1), (2, "t", 10)], lengths={1: 20, 2: 20}, total_chunks=5, avg_length=20
    )
    assert tf_scores[1] < tf_scores[2] < 3 * tf_scores[1]
