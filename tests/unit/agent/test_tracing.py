"""Tracing: run metadata is a pure function; backends attach only when configured and importable."""

from __future__ import annotations

from agent.result import TurnContext
from agent.tracing import (
    TracingConfig,
    langfuse_configured,
    langsmith_configured,
    run_metadata,
    tracing_from_env,
)


def test_metadata_groups_runs_by_thread_and_user() -> None:
    meta = run_metadata(
        thread_id="th-1",
        run_id="run-1",
        context=TurnContext(user_id="u-7", platform="slack"),
        tracing=None,
    )
    assert meta == {"run_id": "run-1", "session_id": "th-1", "user_id": "u-7", "platform": "slack"}


def test_tracing_adds_trace_name_and_env_and_model_tags() -> None:
    tracing = TracingConfig(env_name="prod", model_spec="openai:gpt-4o-mini", trace_name="sb")
    meta = run_metadata(
        thread_id="th-1", run_id="run-1", context=TurnContext(user_id="u"), tracing=tracing
    )
    assert meta["trace_name"] == "sb"
    assert meta["tags"] == ["env:prod", "model:openai:gpt-4o-mini"]
    assert "langfuse_session_id" not in meta


def test_langfuse_keys_are_set_when_langfuse_traces() -> None:
    tracing = TracingConfig(env_name="dev", model_spec="demo", backends=("langfuse",))
    meta = run_metadata(
        thread_id="th-1", run_id="r", context=TurnContext(user_id="u-1"), tracing=tracing
    )
    assert meta["langfuse_session_id"] == "th-1"
    assert meta["langfuse_user_id"] == "u-1"
    assert meta["langfuse_tags"] == ["env:dev", "model:demo"]


def test_caller_supplied_keys_win() -> None:
    tracing = TracingConfig(env_name="dev", model_spec="demo")
    context = TurnContext(
        user_id="u-1", metadata={"session_id": "custom", "trace_name": "mine", "team": "a"}
    )
    meta = run_metadata(thread_id="th-1", run_id="r", context=context, tracing=tracing)
    assert meta["session_id"] == "custom"
    assert meta["trace_name"] == "mine"
    assert meta["team"] == "a"
    assert meta["user_id"] == "u-1"


def test_backends_are_detected_from_the_environment() -> None:
    assert not langfuse_configured({})
    assert not langfuse_configured({"LANGFUSE_PUBLIC_KEY": "pk"})
    assert langfuse_configured({"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk"})
    assert not langsmith_configured({})
    assert langsmith_configured({"LANGSMITH_API_KEY": "ls"})
    assert langsmith_configured({"LANGCHAIN_TRACING_V2": "true"})
    assert not langsmith_configured({"LANGSMITH_API_KEY": "ls", "LANGSMITH_TRACING": "false"})


def test_nothing_configured_means_no_callbacks() -> None:
    tracing = tracing_from_env({}, env_name="dev", model_spec="demo")
    assert tracing.callbacks == () and tracing.backends == ()
    assert tracing.tags == ["env:dev", "model:demo"]


def test_langfuse_without_its_package_degrades_to_no_callbacks() -> None:
    # langfuse is not installed in this environment: configuration alone must not break start-up
    env = {"LANGFUSE_PUBLIC_KEY": "pk-lf", "LANGFUSE_SECRET_KEY": "sk-lf"}
    tracing = tracing_from_env(env, env_name="dev", model_spec="demo")
    assert "langfuse" not in tracing.backends


def test_untraced_spans_run_inline_and_langsmith_tracing_keeps_the_default() -> None:
    import langsmith
    from langsmith._runtime_overrides import get_runtime_overrides

    from agent.tracing import TracingConfig, spans_inline_when_untraced

    try:
        assert not spans_inline_when_untraced(TracingConfig(backends=("langsmith",)))
        assert get_runtime_overrides().aio_to_thread is None
        assert spans_inline_when_untraced(None)
        assert get_runtime_overrides().aio_to_thread is not None
    finally:
        langsmith.set_runtime_overrides()
