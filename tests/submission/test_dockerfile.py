"""The Dockerfile reader: golden cases of what Docker's builder makes of each line."""

from __future__ import annotations

import pytest

from submission.dockerfile import (
    DockerfileError,
    command,
    env_pairs,
    image_settings,
    instructions,
)


@pytest.mark.parametrize(
    ("args", "pairs"),
    [
        ("K=V", {"K": "V"}),
        ("K=V K2=V2", {"K": "V", "K2": "V2"}),
        ('PRECACHE_BENCH="1"', {"PRECACHE_BENCH": "1"}),
        ("A='single quoted' B=\"double quoted\"", {"A": "single quoted", "B": "double quoted"}),
        (r"A=with\ space", {"A": "with space"}),
        (r'A="say \"hi\""', {"A": 'say "hi"'}),
        (r"A='no \escape'", {"A": r"no \escape"}),
        ('HF_OVERRIDES={"sliding_window":100}', {"HF_OVERRIDES": "{sliding_window:100}"}),
        ("HF_OVERRIDES='{\"sliding_window\": 100}'", {"HF_OVERRIDES": '{"sliding_window": 100}'}),
        ("SLIDING_WINDOW 100", {"SLIDING_WINDOW": "100"}),  # the legacy form
        ("GREETING hello   big world", {"GREETING": "hello big world"}),
        ("EMPTY=", {"EMPTY": ""}),
        ("A=1 B=$A C=${A}0", {"A": "1", "B": "1", "C": "10"}),
    ],
)
def test_env_reads_as_docker_reads_it(args: str, pairs: dict[str, str]) -> None:
    assert env_pairs(args) == pairs


@pytest.mark.parametrize("args", ['A="open', "=value", "A", "A=1 B"])
def test_an_env_docker_would_refuse_is_an_error(args: str) -> None:
    with pytest.raises(DockerfileError):
        env_pairs(args)


def test_continuations_comments_and_empty_lines_join_as_the_builder_joins_them() -> None:
    text = (
        "# a comment\n"
        "ARG BASE_IMAGE=podium/engine-base:bookworm\n"
        "FROM ${BASE_IMAGE}\n"
        "\n"
        "ENV PYTHONPATH=/submission/engine \\\n"
        "    # a comment inside the continuation\n"
        "\n"
        "    SLIDING_WINDOW=100 \\\n"
        "    QUANTIZATION=int8\n"
        'CMD ["python", "-m", "engines.baseline"]\n'
    )
    steps = instructions(text)
    assert [(s.name, s.line) for s in steps] == [("ARG", 2), ("FROM", 3), ("ENV", 5), ("CMD", 10)]
    assert env_pairs(steps[2].args) == {
        "PYTHONPATH": "/submission/engine",
        "SLIDING_WINDOW": "100",
        "QUANTIZATION": "int8",
    }


def test_the_escape_directive_makes_the_backtick_the_continuation() -> None:
    text = "# escape=`\nFROM scratch\nENV A=1 `\n    B=2\n"
    steps = instructions(text)
    assert [(s.name, s.line) for s in steps] == [("FROM", 2), ("ENV", 3)]
    assert env_pairs(steps[1].args) == {"A": "1", "B": "2"}


def test_exec_and_shell_forms_give_the_same_words() -> None:
    exec_form = '["python", "-m", "engines.baseline", "--sliding-window", "100"]'
    shell_form = "python -m engines.baseline --sliding-window 100"
    assert command(exec_form) == command(shell_form)


def test_the_settings_of_the_last_stage_with_cmd_arguments_and_their_lines() -> None:
    text = (
        "FROM builder AS build\n"
        "ENV SLIDING_WINDOW=1\n"
        "ARG BASE_IMAGE\n"
        "FROM ${BASE_IMAGE}\n"
        "ENV DTYPE=bfloat16\n"
        'CMD ["python", "-m", "engines.baseline", "--sliding-window=100", "--quantization",'
        ' "int8", "--config", "/submission/engine-config.json"]\n'
    )
    settings, cmd = image_settings(text)
    found = {(s.name, s.value, s.where) for s in settings}
    assert found == {
        ("DTYPE", "bfloat16", "Dockerfile:5 ENV"),
        ("SLIDING_WINDOW", "100", "Dockerfile:6 CMD"),
        ("QUANTIZATION", "int8", "Dockerfile:6 CMD"),
        ("CONFIG", "/submission/engine-config.json", "Dockerfile:6 CMD"),
    }
    assert cmd[:3] == ["python", "-m", "engines.baseline"]
