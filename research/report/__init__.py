"""The report as a document (issue 31): every check and every output reads the report through this package.

- `markdown`: the one markdown-it configuration (shared with the HTML renderer) and where links,
  images, autolinks and code spans sit in the source; `rawhtml`: raw HTML dropped as text.
- `links`: what a link is (markdown-it's tokens after its normalization) and the link policy.
- `citations`: the citation grammar and the report Markdown helpers built on it.
- `references`: which heading starts a references list (English and Chinese) and what its entries say.
- `sentences`: the one sentence splitter.
- `document`: the report parsed once into sections, sentences with their citations, tables, figures.
- `check` (with `claims`, `body`): the claim check run on every report and every edit.
- `carry`: whether a line a model wrote for the deck or the podcast carries a sentence of the report.

No Django, no model: pure functions over text. docs/quality.md describes the guarantees.
"""
