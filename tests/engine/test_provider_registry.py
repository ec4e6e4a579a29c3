"""Providers are a registry (`name -> ProviderKind`), each kind with its own settings and checks.

A throwaway `echo` provider (tests/throwaway/echo_provider.py: one module and
one registry entry) runs a whole task: its change reaches the workspace after
approval; its own check refuses a bad setting before any run folder exists;
an unregistered name is refused with the registered ones listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autocode.errors import UsageError
from autocode.providers import (
    ProviderConfig,
    ProviderKind,
    check_config,
    provider_for,
    provider_names,
)
from autocode.providers import unregister as unregister_provider
from autocode.tasks import Source, TaskOptions, TaskRun
from autocode.tasks.models import AnswerQuestions, ApproveCompletion, ApprovePlan
from support.tasks import NAMING_ANSWER, build_sample, run_dirs
from throwaway import echo_provider

CLI = Source("cli", "tester")


@pytest.fixture
def echo() -> Iterator[ProviderKind]:
    kind = echo_provider.register()
    yield kind
    unregister_provider(kind)


def test_an_echo_provider_runs_a_task_end_to_end(tmp_path: Path, echo: ProviderKind) -> None:
    repo, _ = build_sample("unittest", tmp_path / "textkit")
    run = TaskRun.start(repo, "Say hello from the echo provider", TaskOptions(provider="echo", model="NOTES.md"))
    snap = run.snapshot()
    if isinstance(snap.needs, AnswerQuestions):
        snap = run.answer(snap.needs.questions[0].id, NAMING_ANSWER, CLI)
    assert isinstance(snap.needs, ApprovePlan), snap.needs
    assert snap.needs.plan.steps == ["Write the brief to NOTES.md."]
    snap = run.approve_plan(snap.needs.plan_revision, CLI)
    assert isinstance(snap.needs, ApproveCompletion), snap
    assert not (repo / "NOTES.md").exists()  # nothing reaches the workspace before approval
    # The echo provider writes a note and no test: nothing proves it, so the person confirms.
    assert snap.needs.confirmation == "unproven" and snap.needs.proof is not None
    assert snap.needs.proof.status == "unproven"
    snap = run.approve_completion(CLI, confirm="unproven")
    assert snap.state == "COMPLETED"
    assert (repo / "NOTES.md").read_text() == "Say hello from the echo provider\n"


def test_a_providers_own_check_refuses_before_any_run_folder(tmp_path: Path, echo: ProviderKind) -> None:
    repo, _ = build_sample("unittest", tmp_path / "textkit")
    with pytest.raises(UsageError, match=r"echo provider, whose model names a \.md file"):
        TaskRun.start(repo, "x", TaskOptions(provider="echo", model="notes.txt"))
    assert run_dirs(repo) == []


def test_registered_names_and_an_unknown_one() -> None:
    assert provider_names()[:3] == ("fixture", "openai", "azure")
    with pytest.raises(UsageError, match=r"unknown provider 'echo'; use one of fixture, openai, azure"):
        provider_for(ProviderConfig(provider="echo"), "planner")
    with pytest.raises(UsageError, match="role requirements routes to unknown provider 'echo'"):
        check_config(ProviderConfig(provider="echo"))
    # The built-ins' own checks are unchanged.
    with pytest.raises(UsageError, match="base_url or model is not set"):
        check_config(ProviderConfig(provider="openai"))
    with pytest.raises(UsageError, match=r"needs base_url \(the resource endpoint\)"):
        check_config(ProviderConfig(provider="azure", base_url="https://127.0.0.1"))
    azure = provider_for(ProviderConfig(provider="azure", base_url="https://127.0.0.1", api_version="v1",
                                        deployment="dep"), "planner")
    assert (azure.name, azure.model) == ("azure", "dep")
