"""The offline engine: whole research jobs with no model server (docs/architecture.md, "Parts").

It shares the graph, events, plan review, tools and renderers with the model engine; only the
text-producing functions differ. Everything is extractive and deterministic:

- coordinate: greetings get a short answer, anything else is researched;
- plan: one step per facet of the question (background, current state, key figures, ...);
- research: search + fetch, rank the fetched sentences against the step's query with BM25, keep
  the best non-duplicate ones, each copied verbatim from its source and cited as [n];
- process: descriptive statistics of the numbers found by earlier steps, run in the sandbox;
- report: a summary of the strongest sentences plus one section per step (no references list:
  the orchestrator appends it from the source registry);
- podcast script / slide outline: derived from the report by research.render.derive.

Modules: `question` (small talk, facets, re-plan feedback, a question's parts), `select` (page
weights, the subject check, which pages get a sentence), `numbers` (the number grammar), `process`
(the processing step), `write` (the report), `heavy` (heavy mode's runs and synthesis), `titles` (a
question never split at an "and" inside a clause) and `engine` (the OfflineEngine class: the planner
and the researcher, delegating to the others).
"""

from research.agents.engines.offline.engine import OfflineEngine
from research.agents.engines.offline.question import Aspect, Facet, is_small_talk, question_aspects, question_facets

__all__ = ["Aspect", "Facet", "OfflineEngine", "is_small_talk", "question_aspects", "question_facets"]
