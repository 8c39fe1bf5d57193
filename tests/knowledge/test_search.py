import pytest

from research.knowledge import services
from research.knowledge.models import Document
from research.knowledge.selectors import KBHit, kb_search


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how do plants turn sunlight into chemical energy", "photosynthesis.md"),
        ("magma eruption and lava", "volcanoes.txt"),
        ("what is the event horizon of a black hole", "black_holes.html"),
        ("congestion window after packet loss", "tcp.md"),
        ("feeding a sourdough starter", "sourdough.txt"),
        ("waggle dance of bees", "honeybees.txt"),
        ("storming of the Bastille", "french_revolution.txt"),
        ("espresso grind size", "coffee.md"),
        ("大熊猫吃什么", "panda.txt"),
        ("长城是哪个朝代修建的", "great_wall.md"),
        ("Honeybee colonies", "honeybees.txt"),  # plural/singular and case folded
    ],
)
def test_the_right_document_ranks_first(alice, corpus_kb, query, expected):
    hits = kb_search(user=alice, query=query)
    assert hits, query
    assert Document.objects.get(pk=hits[0].document_id).filename == expected
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_hits_are_citable(alice, corpus_kb):
    hit = kb_search(user=alice, query="Bastille", limit=1)[0]
    assert isinstance(hit, KBHit)
    assert hit.url == f"kb://{hit.document_id}#chunk-{hit.chunk_index}"
    assert hit.document_title == "french_revolution"
    assert "Bastille" in hit.text and hit.score > 0


def test_search_is_scoped_to_the_user_and_collections(alice, bob, corpus_kb):
    bobs = services.collection_create(owner=bob, name="Bob")
    services.document_add(collection=bobs, filename="bob.txt", data=b"Bastille Bastille Bastille prison fortress.")
    # Bob's document is the best match on paper, but alice never sees it.
    assert {h.document_title for h in kb_search(user=alice, query="Bastille fortress")} == {"french_revolution"}
    assert [h.document_title for h in kb_search(user=bob, query="Bastille")] == ["bob"]
    # Naming someone else's collection searches nothing of theirs.
    assert kb_search(user=alice, query="Bastille", collection_ids=[bobs.pk]) == []
    other = services.collection_create(owner=alice, name="Empty")
    assert kb_search(user=alice, query="Bastille", collection_ids=[other.pk]) == []
    assert kb_search(user=alice, query="Bastille", collection_ids=[corpus_kb.pk])


def test_no_terms_or_no_match_gives_nothing(alice, corpus_kb):
    assert kb_search(user=alice, query="") == []
    assert kb_search(user=alice, query="the of and") == []  # stop words only
    assert kb_search(user=alice, query="zyxwvut") == []


def test_limit_and_stable_order(alice, corpus_kb):
    hits = kb_search(user=alice, query="carbon dioxide water", limit=2)
    assert len(hits) == 2
    assert hits == kb_search(user=alice, query="carbon dioxide water", limit=2)


def test_long_document_returns_the_relevant_chunk(alice, alice_kb):
    filler = "\n\n".join(
        f"Section {i}. "
        + " ".join(f"Generic filler sentence number {i}-{j} about nothing in particular." for j in range(8))
        for i in range(30)
    )
    text = filler + "\n\nThe secret ingredient is cardamom, added to the dough at the very end.\n\n" + filler
    document = services.document_add(collection=alice_kb, filename="long.txt", data=text.encode())
    assert document.chunk_count > 5
    hit = kb_search(user=alice, query="secret ingredient cardamom", limit=1)[0]
    assert "cardamom" in hit.text
    assert 0 < hit.chunk_index < document.chunk_count - 1
