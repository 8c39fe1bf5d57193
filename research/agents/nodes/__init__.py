"""The LLM engine's nodes, one module each (coordinator, planner, researcher, coder, reporter, scripts),
over a typed model boundary (model.ChatModel), the researcher's tools (tools.py) and step budgets
(budget.py). research.agents.engines.llm.LLMEngine puts them behind the Engine protocol.
See docs/agents.md and docs/architecture.md."""
