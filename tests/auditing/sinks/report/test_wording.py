"""The sentences every sink shares (auditing/sinks/report/wording.py), read from a verdict's flat trust figures:
the capacity check's clauses, the row groups, the trust and detectability, a slice table's words and a replaced
partition. Where each shows: the report's, the alert's and the results command's tests."""

from auditing.sinks.report.wording import (
    CHECK_DID_NOT_RUN,
    DETECTABILITY_MEANINGS,
    capacity_check_clauses,
    capacity_check_sentence,
    claim_words,
    detectability_sentence,
    groups_sentence,
    inputs_replaced_sentence,
    slices_budget_words,
    trust_sentence,
)
from auditing.verdict.types import TrustFigures

CHECKED = TrustFigures(check_rows=20_000, epsilon_check=1.23456, misfit_kappa_upper=0.25, check_misfit_kappa=None)


def test_the_capacity_check_is_four_clauses_at_the_verdict_s_confidence_or_one_when_it_did_not_run():
    clauses = capacity_check_clauses(CHECKED, 0.95)
    assert clauses[0] == "capacity check on 20,000 check rows (rows of the day the model never saw)"
    assert clauses[1].startswith("epsilon_check 1.235, a lower bound on eps at 95% confidence")
    assert "kappa <= 0.25 (upper confidence limit, within the same 95%)" in clauses[2]
    assert clauses[3] == "misfit the model shows at all: not computed (lower confidence figure at 95%)"
    unbounded = TrustFigures(check_rows=5, epsilon_check=0.1, misfit_kappa_upper=float("inf"))
    assert "no finite limit" in capacity_check_clauses(unbounded)[2] and "the verdict's" in capacity_check_clauses(unbounded)[1]
    for not_run in (TrustFigures(), TrustFigures(check_rows=0, epsilon_check=1.0), TrustFigures(check_rows=5)):
        assert capacity_check_clauses(not_run) == [CHECK_DID_NOT_RUN]
        assert capacity_check_sentence(not_run, brief=True) == CHECK_DID_NOT_RUN


def test_the_capacity_check_sentence_joins_its_clauses_and_the_brief_one_names_the_assumption():
    clauses = capacity_check_clauses(CHECKED, 0.95)
    assert capacity_check_sentence(CHECKED, 0.95) == f"{clauses[0]}: {clauses[1]}; {clauses[2]}; {clauses[3]}"
    brief = capacity_check_sentence(CHECKED, 0.95, brief=True)
    assert brief.startswith("capacity check on 20,000 check rows: epsilon_check 1.235") and "assumption T" in brief


def test_the_row_groups_sentence_for_no_rule_no_pair_and_an_agreement():
    assert groups_sentence(TrustFigures()).startswith("row groups: no grouping recorded")
    lone = TrustFigures(group_rule="column user_id", rows_excluded_groups=1234)
    assert groups_sentence(lone) == ("row groups: column user_id; 1,234 audited row(s) left out for sharing a group; "
                                     "no two rows of the day share a group (no label agreement to measure)")
    paired = TrustFigures(group_rule="column user_id", rows_excluded_groups=0, group_pairs=5000,
                          group_label_agreement=0.9, group_label_agreement_expected=0.825)
    assert "labels agree in 90.0% of the 5,000 pairs of rows sharing a group, against 82.5%" in groups_sentence(paired)


def test_trust_and_detectability_read_a_record_old_or_new():
    assert trust_sentence(TrustFigures(trust="untrusted", trust_reason="misfit")) == "trust: untrusted: misfit"
    assert trust_sentence(TrustFigures(trust="trusted")) == "trust: trusted"
    old = TrustFigures(untrusted_reason="the night is void: a control failed")
    assert trust_sentence(old) == ("trust: not recorded (a row written before per-verdict trust); its night was "
                                   "untrusted: the night is void: a control failed")
    assert detectability_sentence(TrustFigures()) is None
    assert detectability_sentence(TrustFigures(detectability="void")) == \
        f"detectability of the floors: void: {DETECTABILITY_MEANINGS['void']}"


def test_slice_claim_and_replaced_partition_words():
    assert slices_budget_words(0.05, 13, 0.9961538) == "own budget 0.05 over 13 slices, each at confidence 99.62%"
    assert slices_budget_words(0.05, 1, 0.95).startswith("own budget 0.05 over 1 slice, ")
    assert (claim_words(0.5), claim_words(float("inf"))) == ("eps 0.5", "inf (no claim)")
    sentence = inputs_replaced_sentence("sha256:" + "ab" * 32, "2024-01-03")
    assert sentence.startswith("inputs replaced since 2024-01-03: the day's partition this verdict judged "
                               "(sha256:abababababab...) was replaced")
    assert "judged was replaced" in inputs_replaced_sentence(None, "2024-01-03")
