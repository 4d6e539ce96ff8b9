"""The reproduction scorecard: did the papers hold up?  One row per result a paper states, with a verdict that a
check in the chapter's own run decides.

A chapter module registers its paper's results once, as :class:`Claim` records (its ``CLAIMS``): every theorem,
proposition, lemma and corollary, every table and figure, and the headline claims of the abstract and conclusion.
Its notebook opens a :class:`Card` on them, records each verdict beside the check that decides it
(:meth:`Card.check`, :meth:`Card.compare`, :meth:`Card.passed` after the cell's asserts) and publishes the card in
its last cell (:meth:`Card.publish`, glued under :data:`GLUE_KEY`).  The build writes the scorecard page and the
intro's summary from the executed notebooks' cards (:func:`page`, :func:`summary`), so both show the verdicts and
numbers of the very build the reader looks at.

The verdicts have fixed meanings:

* ``reproduced``: our number agrees with the paper's within the stated tolerance or its printed precision;
* ``reproduced in shape``: the book's scale differs from the paper's, and a qualitative property (the claim's
  ``reason`` says which) holds;
* ``differs``: the check shows the paper wrong; the claim names the row of the chapter's errata table;
* ``not reproduced here``: this build cannot run it (the claim's ``reason`` says why: a GPU, data that cannot ship,
  weights the book cannot download, or a check that runs only at another scale);
* ``not checkable``: the paper gives too little (the ``reason`` says what is missing).

The first three are decided by a boolean computed in the run: a claim expected to be reproduced (or reproduced in
shape) whose check fails is recorded as ``differs``, and a claim expected to differ whose evidence fails is recorded
as ``reproduced``, so a change of code, seed or scale shows on the page instead of leaving a stale verdict.
"""
from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass

REPRODUCED = "reproduced"
IN_SHAPE = "reproduced in shape"
DIFFERS = "differs"
NOT_HERE = "not reproduced here"
NOT_CHECKABLE = "not checkable"
VERDICTS = (REPRODUCED, IN_SHAPE, DIFFERS, NOT_HERE, NOT_CHECKABLE)
CHECKED = (REPRODUCED, IN_SHAPE, DIFFERS)  # the verdicts a check in the run decides
#: theorem-like results (theorem, proposition, lemma, corollary), tables, figures, other stated results (a remark, a
#: sentence of the text) and the headline claims of the abstract and conclusion
KINDS = ("theorem", "table", "figure", "statement", "headline")
GLUE_KEY = "scorecard"


@dataclass(frozen=True)
class Claim:
    """One result a paper states.

    ``key`` is unique in the book (a theorem-like claim takes the label of its proof box, e.g. ``ziller-prop1``);
    ``where`` locates it in the paper (``"Prop. 1, eqs. (4)-(5)"``, ``"Table 1"``, ``"Abstract"``); ``kind`` is one of
    :data:`KINDS`; ``says`` what the paper states, in a sentence of MyST (a number in it is pasted from the chapter
    module's ``PAPER_*`` constants); ``link`` a MyST reference to where the chapter decides it (``{prf:ref}`...```,
    ``{numref}`...``` or ``{ref}`...```); ``expect`` the verdict when the check holds (:data:`REPRODUCED`,
    :data:`IN_SHAPE`, :data:`DIFFERS`), or :data:`NOT_HERE` / :data:`NOT_CHECKABLE` for a claim no run here decides;
    ``reason`` the property asserted (:data:`IN_SHAPE`), or why it is not reproduced / what the paper leaves out;
    ``erratum`` the row of the chapter's errata table that a :data:`DIFFERS` claim rests on.
    """

    key: str
    where: str
    kind: str
    says: str
    link: str
    expect: str
    reason: str = ""
    erratum: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.key!r}: kind={self.kind!r}; allowed: {KINDS}")
        if self.expect not in VERDICTS:
            raise ValueError(f"claim {self.key!r}: expect={self.expect!r}; allowed: {VERDICTS}")
        if self.expect in (IN_SHAPE, NOT_HERE, NOT_CHECKABLE) and not self.reason:
            raise ValueError(f"claim {self.key!r}: expect={self.expect!r} needs a reason (the property asserted, or "
                             "why it is not checked here)")
        if (self.expect == DIFFERS) != (self.erratum is not None):
            raise ValueError(f"claim {self.key!r}: expect={self.expect!r}, erratum={self.erratum!r}; allowed: an "
                             "erratum row exactly for a claim expected to differ")
        if not self.link.startswith("{"):
            raise ValueError(f"claim {self.key!r}: link={self.link!r}; allowed: a MyST role such as "
                             "{prf:ref}`label`, {numref}`label` or {ref}`label`")


@dataclass
class Finding:
    """A claim's row in a run: the claim, the verdict, what the book found (MyST), and whether a check in the run
    decided the verdict."""

    claim: Claim
    verdict: str
    found: str
    checked: bool


class Card:
    """The scorecard of one paper in one run: ``Card(paper, claims, errata=...)``, ``paper`` the paper's short name,
    ``claims`` the chapter module's ``CLAIMS``, ``errata`` the label of the chapter's errata table on the errata page
    (where a :data:`DIFFERS` row points), ``run`` what the run's checks ran on and at which scale (the scorecard and
    the errata page print it above the card's findings; ``None``: the findings name it themselves)."""

    def __init__(self, paper: str, claims, *, errata: str, run: str | None = None):
        self.paper, self.errata, self.run = paper, errata, run
        self.claims = {}
        for claim in claims:
            if claim.key in self.claims:
                raise ValueError(f"claim {claim.key!r} is registered twice")
            self.claims[claim.key] = claim
        self.findings: dict[str, Finding] = {}
        self._drawn = False  # the chapter's table of verdicts (decided_table) has been drawn

    def _claim(self, key: str) -> Claim:
        if key not in self.claims:
            raise ValueError(f"claim {key!r} is not among the {self.paper} claims; allowed: {sorted(self.claims)}")
        if key in self.findings:
            raise ValueError(f"claim {key!r} was already decided in this run (one check per claim)")
        if self._drawn:
            raise ValueError(f"claim {key!r} is decided after the chapter's table of verdicts was drawn "
                             "(decided_table): draw it after the last check")
        claim = self.claims[key]
        if claim.expect not in CHECKED:
            raise ValueError(f"claim {key!r} is {claim.expect!r}: no check in the run decides it")
        return claim

    def check(self, key: str, *, holds: bool, found: str) -> None:
        """Record the verdict of claim ``key`` from ``holds``, the outcome of the check that decides it: the claim's
        expected verdict when it holds, else :data:`DIFFERS` (or :data:`REPRODUCED` for a claim expected to
        differ).  ``found`` says what the book found, with its numbers.  Nothing is returned, so that a cell ending
        with it shows no output; the verdicts are in :meth:`publish`."""
        claim = self._claim(key)
        if not isinstance(holds, bool):
            holds = bool(holds)  # numpy booleans
        verdict = claim.expect if holds else (REPRODUCED if claim.expect == DIFFERS else DIFFERS)
        self.findings[key] = Finding(claim, verdict, found, True)

    def compare(self, key: str, *, ours: float, paper: float, rtol: float = 0.0, atol: float = 0.0,
                fmt: str = ".3g", unit: str = "", what: str = "") -> None:
        """Record claim ``key`` by comparing ``ours`` with the paper's number: the check holds when
        ``|ours - paper| <= atol + rtol |paper|`` (the tolerance of the comparison, or the paper's printed
        precision).  ``what`` names the number in the finding (e.g. ``"the MSE ratio at a = 10:"``)."""
        if not (math.isfinite(ours) and math.isfinite(paper)):
            raise ValueError(f"claim {key!r}: ours={ours!r}, paper={paper!r}; allowed: finite numbers")
        holds = abs(ours - paper) <= atol + rtol * abs(paper)
        found = f"{what + ' ' if what else ''}{ours:{fmt}}{unit} (paper: {paper:{fmt}}{unit})"
        self.check(key, holds=holds, found=found)

    def passed(self, key: str, *, found: str) -> None:
        """Record claim ``key`` as decided by the asserts the cell has just run: its expected verdict (a failed
        assert stops the chapter before this line, as it always has).  ``found`` says what they measured."""
        self.check(key, holds=True, found=found)

    def not_run(self, key: str, *, why: str) -> None:
        """Record that the check of claim ``key`` does not run at this run's scale (a sweep that only the ``book``
        and ``paper`` scales run): the row reads :data:`NOT_HERE` with ``why``, and it is not a decided verdict."""
        claim = self._claim(key)
        self.findings[key] = Finding(claim, NOT_HERE, why, False)

    def decided_table(self, *, label: str) -> str:
        """The chapter's own table of the verdicts its run decided, as a MyST table named ``label`` (the notebook
        glues it as Markdown and pastes it with ``{glue:md}``, so that its formulas and code read as on the
        scorecard page): one row per claim a check decided, in registration order, with where the paper states it,
        what the run found and the verdict; the scorecard page adds the paper's words, the reasons and the rows no
        check decides.  Drawn after the chapter's last check: a claim recorded later is an error."""
        self._drawn = True
        lines = [f":::{{table}} Each result of {self.paper} that this run's checks decide: where the paper states it, "
                 "what the run found and the verdict. The {doc}`scorecard </book/scorecard>` quotes the paper beside "
                 "each row and links to the check.", f":name: {label}", "",
                 "| Where | Found here | Verdict |", "|---|---|---|"]
        lines += [f"| {_cell(f.claim.where)} | {_cell(f.found)} | **{f.verdict}** |"
                  for key in self.claims if (f := self.findings.get(key)) is not None and f.checked]
        return "\n".join([*lines, ":::"])

    def publish(self) -> str:
        """The card as JSON, every claim in registration order, for the notebook to glue under :data:`GLUE_KEY`.
        A claim no run decides (:data:`NOT_HERE`, :data:`NOT_CHECKABLE`) is recorded with its reason; a claim
        that should have been checked and was not is an error."""
        missing = [k for k, c in self.claims.items() if c.expect in CHECKED and k not in self.findings]
        if missing:
            raise ValueError(f"claims never checked in this run: {missing}")
        rows = []
        for key, claim in self.claims.items():
            finding = self.findings.get(key) or Finding(claim, claim.expect, "", False)
            rows.append({**asdict(claim), "verdict": finding.verdict, "found": finding.found,
                         "checked": finding.checked})
        return json.dumps({"paper": self.paper, "errata": self.errata, "run": self.run, "rows": rows},
                          ensure_ascii=False)


def read_card(executed_notebook) -> dict | None:
    """The card a chapter's executed notebook published (``None`` if it published none)."""
    import nbformat

    nb = nbformat.read(executed_notebook, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == GLUE_KEY:
                text = next(v for k, v in output["data"].items() if k.endswith("text/plain"))
                return json.loads(ast.literal_eval(text))
    return None


def counts(card: dict) -> Counter:
    """How many rows of each verdict a card has."""
    return Counter(row["verdict"] for row in card["rows"])


#: a formula followed by punctuation: the punctuation goes inside it, so that it cannot wrap onto a line of its own
_MATH_THEN_PUNCTUATION = re.compile(r"\$([^$]+)\$([.,;:])")


def _cell(text: str) -> str:
    """``text`` as one table cell: one line, its pipes escaped, the punctuation after a formula inside it."""
    text = _MATH_THEN_PUNCTUATION.sub(r"$\1\2$", " ".join(str(text).split()))
    return text.replace("|", "\\|") or "—"


_BARE_ROLE = re.compile(r"^\{(prf:ref|numref)\}`([\w-]+)`$")


def _link(link: str) -> str:
    """A claim's link with readable text: a bare ``{prf:ref}`` would print only the box's type ("Proposition") and a
    bare ``{numref}`` only the number, so they get "the box" and "Figure %s"."""
    match = _BARE_ROLE.match(link)
    if not match:
        return link
    role, label = match.groups()
    return f"{{prf:ref}}`the box <{label}>`" if role == "prf:ref" else f"{{numref}}`Figure %s <{label}>`"


def paper_table(card: dict, *, label: str) -> str:
    """One paper's rows as a MyST table named ``label``: where, what the paper says, what the book found, the
    verdict (with the erratum it rests on, or the reason) and the link to the chapter's check."""
    lines = [f":::{{table}} Did {card['paper']} hold up? One row per stated result.", f":name: {label}",
             ":class: fixed-columns scorecard-columns", "",
             "| Where | The paper says | Found here | Verdict | Decided in |", "|---|---|---|---|---|"]
    for row in card["rows"]:
        verdict = f"**{row['verdict']}**"
        erratum = f"erratum {row['erratum']} of {{numref}}`Table %s <{card['errata']}>`"
        if row["verdict"] == DIFFERS:
            verdict += f": {erratum}" if row["erratum"] is not None else ": this build found otherwise, no erratum"
        elif row["expect"] == DIFFERS:  # the evidence of an erratum did not show in this run
            verdict += f": the evidence of {erratum} did not show in this build"
        elif row["expect"] in CHECKED and not row["checked"]:
            verdict += ": the check does not run at this scale"
        elif row["reason"]:
            verdict += f": {row['reason']}"
        lines.append(f"| {_cell(row['where'])} | {_cell(row['says'])} | {_cell(row['found'])} | {_cell(verdict)} "
                     f"| {_link(row['link'])} |")
    lines.append(":::")
    return "\n".join(lines)


def errata_checks(card: dict, *, elsewhere: dict[int, str]) -> str:
    """The errata page's list under a paper's errata table: for every row, the verdict and the finding of the claim
    that decides it in this build (with its link), or why no claim does (``elsewhere``, the chapter module's
    ``ERRATA_ELSEWHERE``).  A row whose evidence did not show in this build says so."""
    decided: dict[int, list[dict]] = {}
    for row in card["rows"]:
        if row["erratum"] is not None:
            decided.setdefault(row["erratum"], []).append(row)
    on = f", on {card['run']}" if card.get("run") else ""
    lines = [f"What this build's checks found{on}, row by row (the {{doc}}`scorecard <scorecard>` lists every "
             "result):", ""]
    for number in sorted({*decided, *elsewhere}):
        if number not in decided:
            lines.append(f"- Row {number}: no check decides it: {elsewhere[number]}.")
            continue
        for row in decided[number]:
            shown = "" if row["verdict"] == DIFFERS else " (the evidence of this row did not show in this build)"
            found = f": {_cell(row['found'])}" if row["found"] else ""
            lines.append(f"- Row {number}, {_cell(row['where'])}: **{row['verdict']}**{shown}{found}. Decided in "
                         f"{_link(row['link'])}.")
    return "\n".join(lines)


def summary(cards: dict[str, dict]) -> str:
    """The intro's summary: per paper the count of each verdict, linked to its section of the scorecard page (a MyST
    table of class ``verdict-summary``, which a phone shows as one card per paper)."""
    lines = [":::{table} How many of each paper's stated results this build reproduced, by verdict.",
             ":name: scorecard-summary", ":class: verdict-summary", "",
             "| Paper | " + " | ".join(VERDICTS) + " |", "|---|" + "---|" * len(VERDICTS)]
    for key, card in cards.items():
        c = counts(card)
        lines.append(f"| {{ref}}`{card['paper']} <scorecard-{key}>` | " + " | ".join(str(c[v]) for v in VERDICTS)
                     + " |")
    return "\n".join([*lines, ":::"])


def page(cards: dict[str, dict]) -> str:
    """The scorecard page's generated part: per paper (keyed by chapter), a heading with its counts and its table."""
    parts = []
    for key, card in cards.items():
        c = counts(card)
        tally = ", ".join(f"{c[v]} {v}" for v in VERDICTS if c[v])
        run = f" Found here on {card['run']}." if card.get("run") else ""
        parts += [f"(scorecard-{key})=", f"## {card['paper']}", "", f"{len(card['rows'])} results: {tally}.{run}", "",
                  paper_table(card, label=f"scorecard-table-{key}"), ""]
    return "\n".join(parts).rstrip() + "\n"
