"""An experiment's questions are answered from its summary in generated sentences: a
speedup at one problem or over several, a best configuration, a bound and a throughput;
a difference within the timing noise is called the same, a question without data says so."""

import pandas as pd

from ncuflow.report.questions import HEADING, answer, markdown
from ncuflow.study.questions import (
    Question,
    parse_questions,
    questions_from_json,
    questions_json,
)

DIMS = ["M", "N", "K"]


def _summary() -> pd.DataFrame:
    rows = []
    for m, (fast, slow, ci) in {1024: (1.0, 2.0, 0.5), 2048: (4.0, 10.0, 0.5),
                                 4096: (30.0, 30.2, 0.5)}.items():  # fmt: skip
        for variant, time_ms in (("tiled", fast), ("colcopy", slow)):
            rows.append({"M": m, "N": m, "K": m, "variant": variant, "time_ms": time_ms,
                         "time_ci95_pct": ci, "parameters": f"BX=16, BY={m // 256}",
                         "throughput": 2 * m**3 / time_ms / 1e9, "unit": "TFLOP/s",
                         "pct_of_library": 50.0 if variant == "tiled" else None,
                         "library": "cublas_fp32" if variant == "tiled" else None,
                         "bound": "memory", "bound_level": "l1",
                         "ncu_bottleneck": "Memory"})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_speedup_over_several_problems_is_a_geometric_mean_with_its_range() -> None:
    question = Question("coalescing", "speedup", ("tiled", "colcopy"))
    text = answer(_summary(), question, DIMS)
    # ratios 2.0, 2.5 and 30.2/30 = 1.0067: geometric mean (2·2.5·1.0067)^(1/3) = 1.714
    assert text.startswith("tiled is 1.71× as fast as colcopy (geometric mean over 3 problems; ")
    assert "1.01× at M = 4096, N = 4096, K = 4096 to 2.50× at M = 2048" in text


def test_a_speedup_at_one_problem_within_the_noise_is_the_same() -> None:
    at_4096 = Question("coalescing", "speedup", ("tiled", "colcopy"), at={"M": 4096})
    assert answer(_summary(), at_4096, DIMS).startswith(
        "tiled and colcopy take the same time within the timing noise at M = 4096"
    )
    at_2048 = Question("coalescing", "speedup", ("colcopy", "tiled"), at={"M": 2048})
    assert answer(_summary(), at_2048, DIMS) == (
        "colcopy takes 2.50× the time of tiled at M = 2048, N = 2048, K = 2048"
    )


def test_a_speedup_where_no_problem_column_varies_pairs_the_two_rows() -> None:
    one_size = _summary().query("M == 2048")
    question = Question("coalescing", "speedup", ("tiled", "colcopy"))
    assert answer(one_size, question, []) == "tiled is 2.50× as fast as colcopy"


def test_best_bound_and_throughput_are_said_per_problem() -> None:
    summary = _summary()
    best = answer(summary, Question("geometry", "best", ("tiled",), at={"M": 4096}), ["M"])
    assert best == "tiled: BX=16, BY=16 (30.0000 ms) at M = 4096"
    bound = answer(summary, Question("what bounds it", "bound", ("tiled",), at={"M": 1024}), ["M"])
    assert bound == "tiled: memory (l1; ncu: Memory) at M = 1024"
    rate = answer(summary, Question("rate", "throughput", ("tiled",), at={"M": 1024}), ["M"])
    assert rate == "tiled: 2.15 TFLOP/s, 50.0 % of cublas_fp32 at M = 1024"


def test_a_question_without_data_says_so() -> None:
    question = Question("x", "best", ("tiled",), at={"M": 512})
    assert answer(_summary(), question, DIMS) == (
        "not answered: no configuration of tiled measured ok at M = 512"
    )
    pair = Question("x", "speedup", ("tiled", "colcopy"), at={"M": 512})
    assert answer(_summary(), pair, DIMS).startswith("not answered: tiled and colcopy have no")


def test_the_section_names_the_device_and_quotes_the_report() -> None:
    questions = parse_questions(
        [{"ask": "coalescing the tile copy", "speedup": ["tiled", "colcopy"], "at": {"M": 2048},
          "report": "report 000: 2× on a T4"}], ["tiled", "colcopy"], DIMS, "experiments.e",
    )  # fmt: skip
    assert questions_from_json(questions_json(questions)) == questions
    text = markdown(_summary(), questions, DIMS, "NVIDIA H100 80GB HBM3")
    assert text.startswith(f"{HEADING}\n\nAnswered from this study's measurements on the "
                           "NVIDIA H100 80GB HBM3.")  # fmt: skip
    assert ("- **coalescing the tile copy**: tiled is 2.50× as fast as colcopy at M = 2048, "
            "N = 2048, K = 2048 (report 000: 2× on a T4).") in text  # fmt: skip
    assert markdown(_summary(), (), DIMS, None) == ""
