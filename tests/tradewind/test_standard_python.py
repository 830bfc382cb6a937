"""The standard provider's Python operators: how the callable is called, branches, short
circuits, and the callable run in another interpreter."""

from __future__ import annotations

import concurrent.futures
import sys
from typing import Any

import pytest

from tradewind import DAG, DagDefinitionError, SkipTask
from tradewind.spellings import Airflow2Spelling
from tradewind.standard.branch import BaseBranchOperator
from tradewind.standard.python import (
    BranchPythonOperator,
    PythonOperator,
    ShortCircuitOperator,
    determine_kwargs,
)
from tradewind.standard.python_venv import (
    BranchExternalPythonOperator,
    ExternalPythonOperator,
    PythonVirtualenvOperator,
)
from tradewind.virtualenv import FRESH_PROCESS

from .standard_helpers import context_of


def named(a: Any, ds: Any = None, ti: Any = None) -> Any:
    return (a, ds, ti.task_id)


def anything(a: Any, **kwargs: Any) -> Any:
    return sorted(kwargs)


def test_the_callable_gets_the_context_keys_it_names_or_all_with_kwargs() -> None:
    context = {"ds": "2026-01-05", "ti": "the ti", "other": 1}

    assert determine_kwargs(named, [1], context) == {"ds": "2026-01-05", "ti": "the ti"}
    assert determine_kwargs(anything, [1], context) == context


def test_an_op_arg_filling_a_context_key_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="op_args fills parameter 'ds', a context key"):
        determine_kwargs(named, [1, 2], {"ds": "x"})


def test_a_python_operator_calls_with_op_args_op_kwargs_and_the_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with DAG("py"):
        op = PythonOperator(task_id="p", python_callable=named, op_kwargs={"a": 5})

    assert op.execute(context_of(op)) == (5, "2026-01-05", "p")
    assert "Done. Returned value was: (5, '2026-01-05', 'p')" in capsys.readouterr().out


def test_op_kwargs_and_templates_dict_are_merged_into_the_context() -> None:
    def show(templates_dict: Any = None, extra: Any = None, **kwargs: Any) -> Any:
        return templates_dict, extra, kwargs["dag_run"].run_id

    with DAG("py"):
        op = PythonOperator(
            task_id="p",
            python_callable=show,
            op_kwargs={"extra": "{{ ds_nodash }}"},
            templates_dict={"day": "{{ ds }}"},
            show_return_value_in_logs=False,
        )
    context = context_of(op)
    op.render_template_fields(context)

    assert op.execute(context) == ({"day": "2026-01-05"}, "20260105", "r1")
    assert context["templates_dict"] == {"day": "2026-01-05"}


def test_an_async_callable_is_awaited() -> None:
    async def later(x: int) -> int:
        return x + 1

    with DAG("py"):
        op = PythonOperator(task_id="p", python_callable=later, op_args=[1])

    # On a thread of its own, as in a task process: no event loop of another test is running.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(op.execute, context_of(op)).result() == 2


def test_a_python_operator_refuses_what_is_not_callable_and_warns_on_provide_context() -> None:
    with DAG("py"):
        with pytest.raises(DagDefinitionError, match="PythonOperator p: python_callable"):
            PythonOperator(task_id="p", python_callable="nope")
        with pytest.warns(Airflow2Spelling, match="provide_context"):
            PythonOperator(task_id="q", python_callable=named, provide_context=True)


def test_a_branch_operator_marks_its_task_and_returns_the_ids() -> None:
    with DAG("br") as built:
        op = BranchPythonOperator(task_id="b", python_callable=lambda: ["x"])

    structure = built.structure()["tasks"]["b"]
    assert structure["kind"] == "branch"
    assert op.execute(context_of(op)) == ["x"]


def test_a_mapped_branch_operator_is_refused() -> None:
    with DAG("br"), pytest.raises(DagDefinitionError, match="a mapped BranchPythonOperator"):
        BranchPythonOperator.partial(task_id="b", python_callable=lambda: None)


def test_a_branch_operator_subclass_must_choose() -> None:
    class NoChoice(BaseBranchOperator):
        pass

    with DAG("br"), pytest.raises(DagDefinitionError, match="must define choose_branch"):
        NoChoice(task_id="n")


@pytest.mark.parametrize("ignore", [True, False])
def test_a_short_circuit_operator_carries_ignore_downstream_trigger_rules(ignore: bool) -> None:
    with DAG("sc") as built:
        op = ShortCircuitOperator(
            task_id="s", python_callable=lambda: 0, ignore_downstream_trigger_rules=ignore
        )

    structure = built.structure()["tasks"]["s"]
    assert (structure["kind"], structure["ignore_downstream_trigger_rules"]) == (
        "short_circuit",
        ignore,
    )
    assert op.execute(context_of(op)) == 0


def outside(x: int, ds: Any = None) -> dict[str, Any]:
    import os
    import sys

    return {
        "x": x,
        "ds": ds,
        "strings": virtualenv_string_args,  # type: ignore[name-defined]  # noqa: F821
        "colour": os.environ.get("COLOUR"),
        "home": os.environ.get("HOME"),
        "python": sys.executable,
    }


def test_an_external_python_operator_runs_the_source_with_the_python_given() -> None:
    with DAG("ext") as built:
        op = ExternalPythonOperator(
            task_id="e",
            python=sys.executable,
            python_callable=outside,
            op_args=[3],
            string_args=["a", "b"],
            env_vars={"COLOUR": "red"},
            inherit_env=False,
        )

    result = op.execute(context_of(op))
    assert result == {
        "x": 3,
        "ds": "2026-01-05",
        "strings": ["a", "b"],
        "colour": "red",
        "home": None,
        "python": sys.executable,
    }
    assert getattr(built.get_task("e").python_callable, FRESH_PROCESS)


def exits(code: int) -> None:
    import sys

    sys.exit(code)


def test_an_exit_code_of_skip_on_exit_code_skips_the_task() -> None:
    with DAG("ext"):
        op = ExternalPythonOperator(
            task_id="e",
            python=sys.executable,
            python_callable=exits,
            op_args=[99],
            skip_on_exit_code=99,
        )

    with pytest.raises(SkipTask, match="exited 99: task skipped"):
        op.execute(context_of(op))


def choose(choices: list[str]) -> str:
    return choices[-1]


def test_a_branch_external_python_operator_chooses_in_the_other_python() -> None:
    with DAG("ext") as built:
        op = BranchExternalPythonOperator(
            task_id="b", python=sys.executable, python_callable=choose, op_args=[["x", "y"]]
        )

    assert built.structure()["tasks"]["b"]["kind"] == "branch"
    assert op.execute(context_of(op)) == "y"


def in_venv(x: int) -> dict[str, Any]:
    import sys

    return {"x": x, "prefix": sys.prefix}


def test_a_virtualenv_operator_runs_in_a_venv_kept_under_venv_cache_path(tmp_path: Any) -> None:
    with DAG("venv"):
        op = PythonVirtualenvOperator(
            task_id="v",
            python_callable=in_venv,
            op_args=[2],
            requirements=[],
            system_site_packages=False,
            venv_cache_path=str(tmp_path),
            serializer="cloudpickle",
            index_urls=["https://one.example/simple", "https://two.example/simple"],
        )

    result = op.execute(context_of(op))
    assert result["x"] == 2 and result["prefix"].startswith(str(tmp_path))
    assert op.pip_install_options == [
        "--index-url",
        "https://one.example/simple",
        "--extra-index-url",
        "https://two.example/simple",
    ]


def test_the_interpreter_operators_refuse_bad_arguments_in_one_line() -> None:
    with DAG("bad"):
        with pytest.raises(DagDefinitionError, match="serializer must be one of"):
            ExternalPythonOperator(
                task_id="e", python=sys.executable, python_callable=outside, serializer="yaml"
            )
        with pytest.raises(DagDefinitionError, match="python must be the path"):
            ExternalPythonOperator(task_id="f", python="", python_callable=outside)
        with pytest.raises(DagDefinitionError, match="index_urls_from_connection_ids"):
            PythonVirtualenvOperator(
                task_id="g", python_callable=outside, index_urls_from_connection_ids=["pypi"]
            )
