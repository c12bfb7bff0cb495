"""The LangGraph agent: model, tools, clarification, loop detection, reply extraction."""

__all__: list[str] = []
