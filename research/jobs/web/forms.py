"""Forms: new job, and the plan editor (a formset that works without JavaScript)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from research.agents.depth import DEFAULT_RUNS, MAX_RUNS
from research.agents.types import Plan, PlanStep
from research.jobs.questions import MAX_QUESTION_CHARS, question_clean
from research.render.budgets import over_budget
from research.render.formats import output_formats

STYLE_CHOICES = [
    ("academic", _("Academic")),
    ("popular_science", _("Popular science")),
    ("news", _("News")),
    ("social_media", _("Social media")),
]

ENGINE_CHOICES = [("auto", _("Automatic")), ("llm", _("Model (vLLM)")), ("offline", _("Offline engine"))]
LOCALE_CHOICES = [("auto", _("Same as the question")), ("en-US", "English"), ("zh-CN", "简体中文")]
DEPTH_CHOICES = [("standard", _("Standard: one run per step")),
                 ("heavy", _("Heavy: parallel runs per step, merged"))]
STEP_TYPE_CHOICES = [("research", _("Research")), ("analysis", _("Analysis")), ("processing", _("Processing (code)"))]


def output_choices() -> list[tuple[str, Any]]:
    """The rendered output formats, read from their registry each time a form is built."""
    return [(f.kind, f.label) for f in output_formats() if f.render is not None]


class DepthFields(forms.Form):
    """Depth and runs, on the new-job form and the plan review (docs/agents.md, "Depth")."""

    # Not required: a form posted without them (an older page, a script) keeps the job's depth.
    depth = forms.ChoiceField(label=_("Depth"), choices=DEPTH_CHOICES, initial="standard", required=False,
                              help_text=_("Heavy runs each research step several times in parallel, each "
                                          "with another emphasis, and merges the findings: slower and "
                                          "costlier, broader and better cross-checked."))
    runs = forms.IntegerField(label=_("Parallel runs per step (heavy)"), min_value=1, max_value=MAX_RUNS,
                              initial=DEFAULT_RUNS, required=False)

    def depth_options(self) -> dict[str, Any]:
        """{"depth", "runs"} as chosen; {} when the form did not send a depth."""
        data = self.cleaned_data
        if not data.get("depth"):
            return {}
        return {"depth": data["depth"], "runs": data.get("runs") or DEFAULT_RUNS}


class JobCreateForm(DepthFields):
    field_order = ["question", "style", "locale", "max_steps", "depth", "runs"]
    # No max_length: the browser would cut a long paste silently at it. The limit is checked by
    # question_clean (the same message as the CLI and the API) and shown by a live counter (data-max).
    question = forms.CharField(label=_("Research question"), widget=forms.Textarea(
        attrs={"rows": 3, "autofocus": True, "data-max": MAX_QUESTION_CHARS, "aria-describedby": "question-count"}))
    style = forms.ChoiceField(label=_("Report style"), choices=STYLE_CHOICES, initial="academic")
    locale = forms.ChoiceField(label=_("Report language"), choices=LOCALE_CHOICES, initial="auto")
    max_steps = forms.IntegerField(label=_("Max steps"), min_value=1, initial=settings.JOB_DEFAULT_STEPS)
    # All of them ticked by default, as the README promises; the Markdown report is always made.
    outputs = forms.MultipleChoiceField(label=_("Outputs"), choices=output_choices, required=False,
                                        widget=forms.CheckboxSelectMultiple,
                                        initial=lambda: [kind for kind, _label in output_choices()],
                                        help_text=_("The Markdown report (report.md) is always made."))
    auto_accept = forms.BooleanField(label=_("Run the plan without review"), required=False)
    engine = forms.ChoiceField(label=_("Engine"), choices=ENGINE_CHOICES, initial="auto")
    kb = forms.TypedChoiceField(label=_("Knowledge base"), required=False, coerce=int, empty_value=None)
    web = forms.BooleanField(label=_("Search the web"), required=False, initial=True)
    background = forms.BooleanField(label=_("Quick background search before planning"), required=False)
    clarify = forms.BooleanField(label=_("Let the model ask clarifying questions first"), required=False,
                                 initial=True)

    def __init__(self, *args: Any, collections: list[tuple[int, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["max_steps"].validators.append(MaxValueValidator(settings.JOB_MAX_STEPS))
        self.fields["max_steps"].widget.attrs["max"] = settings.JOB_MAX_STEPS
        kb_field = self.fields["kb"]
        assert isinstance(kb_field, forms.TypedChoiceField)
        kb_field.choices = [("", _("None")), *(collections or [])]

    def clean_question(self) -> str:
        return question_clean(self.cleaned_data.get("question"))

    def options(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "style": data["style"], "locale": data["locale"], "max_steps": data["max_steps"],
            "outputs": ["md", *data["outputs"]], "auto_accept": data["auto_accept"], "engine": data["engine"],
            "kb": data["kb"], "web": data["web"], "background": data["background"],
            "clarify": data["clarify"] and data["engine"] != "offline",
            **self.depth_options(),
        }


class StepChoiceWidget(forms.Widget):
    """Dependencies chosen by step title: one checkbox per other step, each posting that step's (hidden) id.

    The field's value stays the comma-separated ids it always was, so the plan contract, the formset checks
    and a form posted by a script are unchanged; people only ever see titles.
    """

    template_name = "jobs/_step_choice.html"

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> Any:
        # The project's template loader (the form renderer's own engine does not see templates/).
        from django.template.loader import render_to_string
        from django.utils.safestring import SafeString

        html = render_to_string(self.template_name, self.get_context(name, value, attrs))
        assert isinstance(html, SafeString)
        return html

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.steps: list[tuple[int, str, str]] = []  # (position, id, title) of every step in the plan
        self.own_id = ""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> str:
        if hasattr(data, "getlist"):
            return ", ".join(v for v in data.getlist(name) if v)
        return str(data.get(name, "") or "")

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        chosen = {part.strip() for part in str(value or "").split(",") if part.strip()}
        context["steps"] = [{"n": n, "id": sid, "title": title or _("(untitled step)"), "checked": sid in chosen}
                            for n, sid, title in self.steps if sid != self.own_id]
        return context


class PlanStepForm(forms.Form):
    # The id is the plan's stable key (depends_on, step events); people never need to see or type it.
    id = forms.SlugField(label=_("Id"), max_length=40, widget=forms.HiddenInput)
    title = forms.CharField(label=_("Title"), max_length=300)
    description = forms.CharField(label=_("Description"), required=False, max_length=4000,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    step_type = forms.ChoiceField(label=_("Type"), choices=STEP_TYPE_CHOICES)
    need_search = forms.BooleanField(label=_("Needs search"), required=False)
    depends_on = forms.CharField(label=_("Runs after"), required=False, max_length=400, widget=StepChoiceWidget)

    def __init__(self, *args: Any, steps: list[tuple[int, str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        widget = self.fields["depends_on"].widget
        assert isinstance(widget, StepChoiceWidget)
        widget.steps = steps or []
        widget.own_id = str(self.data.get(self.add_prefix("id"), "") if self.is_bound
                            else (self.initial or {}).get("id", ""))

    def clean_depends_on(self) -> list[str]:
        raw = self.cleaned_data.get("depends_on") or ""
        return [part.strip() for part in raw.replace(";", ",").split(",") if part.strip()]


class BasePlanStepFormSet(forms.BaseFormSet):
    max_steps: int = settings.JOB_MAX_STEPS

    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        return {**super().get_form_kwargs(index), "steps": self._steps()}

    def _steps(self) -> list[tuple[int, str, str]]:
        """(position, id, title) of each step as shown, for choosing dependencies by title."""
        rows: list[Any] = (plan_rows_from_post(self.data, self.prefix or "form") if self.is_bound
                           else list(self.initial or []))
        return [(n, str(r.get("id", "")), str(r.get("title", ""))) for n, r in enumerate(rows, 1)]

    def clean(self) -> None:
        if any(self.errors):
            return
        steps = [f.cleaned_data for f in self.forms if f.cleaned_data]
        if not steps:
            raise forms.ValidationError(_("A plan needs at least one step."))
        if len(steps) > self.max_steps:
            raise forms.ValidationError(_("A plan may have at most %(n)d steps.") % {"n": self.max_steps})
        seen: set[str] = set()
        for form in self.forms:
            sid = form.cleaned_data.get("id")
            if sid in seen:
                form.add_error("id", _("Step ids must be unique; %(id)s is used twice.") % {"id": sid})
            seen.add(sid)
        for form in self.forms:
            for dep in form.cleaned_data.get("depends_on", []):
                if dep not in seen:
                    form.add_error("depends_on", _("There is no step %(id)s.") % {"id": dep})
                elif dep == form.cleaned_data.get("id"):
                    form.add_error("depends_on", _("A step cannot depend on itself."))
        if any(self.errors):
            return
        from research.agents.graph import find_cycle, validate_plan

        rows = [f.cleaned_data for f in self.forms if f.cleaned_data]
        cycle = find_cycle({r["id"]: [d for d in r["depends_on"] if d != r["id"]] for r in rows})
        if cycle:  # said with the titles people see, not the ids validate_plan would name
            titles = {r["id"]: r["title"] for r in rows}
            raise forms.ValidationError(_("Steps wait for each other in a cycle: %(cycle)s.")
                                        % {"cycle": " → ".join(f"“{titles[c]}”" for c in cycle)})

        errors = validate_plan(self.to_plan(title="x"), max_steps=self.max_steps)
        if errors:
            raise forms.ValidationError(errors)

    def to_plan(self, *, title: str, locale: str = "en-US", thought: str = "") -> Plan:
        steps = [PlanStep(**f.cleaned_data) for f in self.forms if f.cleaned_data]
        return Plan(locale=locale, title=title, thought=thought, steps=steps)


PlanStepFormSet = forms.formset_factory(PlanStepForm, formset=BasePlanStepFormSet, extra=0, max_num=50,
                                        absolute_max=50)


class PlanMetaForm(DepthFields):
    base_version = forms.IntegerField(widget=forms.HiddenInput)
    title = forms.CharField(label=_("Plan title"), max_length=300)
    feedback = forms.CharField(label=_("Feedback for the planner"), required=False, max_length=4000,
                               widget=forms.Textarea(attrs={"rows": 2}))


def plan_initial(plan: Plan) -> list[dict[str, Any]]:
    return [
        {"id": s.id, "title": s.title, "description": s.description, "step_type": s.step_type,
         "need_search": s.need_search, "depends_on": ", ".join(s.depends_on)}
        for s in plan.steps
    ]


def plan_rows_from_post(data: Any, prefix: str = "form") -> list[dict[str, Any]]:
    """The raw step rows as posted, for re-displaying after an add/delete/move button."""
    try:
        total = min(int(data.get(f"{prefix}-TOTAL_FORMS", 0)), 50)
    except ValueError:
        total = 0
    rows = []
    for i in range(total):
        rows.append({
            "id": data.get(f"{prefix}-{i}-id", ""), "title": data.get(f"{prefix}-{i}-title", ""),
            "description": data.get(f"{prefix}-{i}-description", ""),
            "step_type": data.get(f"{prefix}-{i}-step_type", "research"),
            "need_search": bool(data.get(f"{prefix}-{i}-need_search")),
            "depends_on": StepChoiceWidget().value_from_datadict(data, None, f"{prefix}-{i}-depends_on"),
        })
    return rows


def plan_rows_apply(rows: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    """Apply an editor button: add, delete-N, up-N, down-N."""
    rows = list(rows)
    name, _sep, index = op.partition("-")
    if name == "add":
        used = {r["id"] for r in rows}
        n = len(rows) + 1
        while f"step-{n}" in used:
            n += 1
        rows.append({"id": f"step-{n}", "title": "", "description": "", "step_type": "research",
                     "need_search": True, "depends_on": ""})
        return rows
    try:
        i = int(index)
    except ValueError:
        return rows
    if not 0 <= i < len(rows):
        return rows
    if name == "delete":
        removed = rows.pop(i)["id"]
        for r in rows:  # drop dangling dependencies on the deleted step
            deps = [d.strip() for d in str(r["depends_on"]).split(",") if d.strip() and d.strip() != removed]
            r["depends_on"] = ", ".join(deps)
    elif name == "up" and i > 0:
        rows[i - 1], rows[i] = rows[i], rows[i - 1]
    elif name == "down" and i < len(rows) - 1:
        rows[i + 1], rows[i] = rows[i], rows[i + 1]
    return rows


# Each "[" costs the Markdown renderer tens of microseconds (an unclosed "![" most), so half a million of them
# would hold a web thread for many seconds; a real report has a few hundred.
MAX_REPORT_BRACKETS = 10_000
# Emphasis markers cost it ~20 µs each (linear, but 300,000 of them are 13x a plain report of the same size).
MAX_REPORT_EMPHASIS = 20_000
# So does each "<" (the inline HTML and autolink rules, then the raw-tag scan): a 1M-character edit of
# unclosed tags took 15x plain prose (issue 34's parser bench); a report has a handful.
MAX_REPORT_ANGLES = 25_000  # "<http://" x 25,000 (an edit of issue #25, linear since) still passes


def report_markdown_problem(markdown: str) -> str:
    """Why an edited report cannot be rendered, or "" (checked before any rendering)."""
    count = markdown.count("[")
    if count > MAX_REPORT_BRACKETS:
        return str(_("The report has %(n)d “[” characters; at most %(max)d are accepted.")
                   % {"n": count, "max": MAX_REPORT_BRACKETS})
    count = markdown.count("<")
    if count > MAX_REPORT_ANGLES:
        return str(_("The report has %(n)d “<” characters; at most %(max)d are accepted.")
                   % {"n": count, "max": MAX_REPORT_ANGLES})
    count = markdown.count("*") + markdown.count("_")
    if count > MAX_REPORT_EMPHASIS:
        return str(_("The report has %(n)d “*” and “_” characters; at most %(max)d are accepted.")
                   % {"n": count, "max": MAX_REPORT_EMPHASIS})
    return render_budget_problem(markdown)  # headings and table cells (issue 34: render cost bounded)


def render_budget_problem(markdown: str) -> str:
    """Why rendering this report would cost too much (REPORT_MAX_HEADINGS, REPORT_MAX_TABLE_CELLS), or ""."""
    max_headings, max_cells = int(settings.REPORT_MAX_HEADINGS), int(settings.REPORT_MAX_TABLE_CELLS)
    over = over_budget(markdown, max_headings=max_headings, max_cells=max_cells)
    if over is None:
        return ""
    what, count = over
    if what == "headings":
        return str(_("The report has %(n)s or more headings; at most %(max)s can be rendered (each one costs the PDF "
                     "and slides a page break's worth of layout). Merge some sections.")
                   % {"n": f"{count:,}", "max": f"{max_headings:,}"})
    return str(_("The report's tables have %(n)s or more cells; at most %(max)s can be rendered. Shorten the "
                 "tables or link to the full data instead.") % {"n": f"{count:,}", "max": f"{max_cells:,}"})


class ReportEditForm(forms.Form):
    markdown = forms.CharField(label=_("Report (Markdown)"), widget=forms.Textarea(attrs={"rows": 30}),
                               max_length=500_000, strip=False)

    def clean_markdown(self) -> str:
        markdown = str(self.cleaned_data["markdown"])
        problem = report_markdown_problem(markdown)
        if problem:
            raise forms.ValidationError(problem)
        return markdown


class SignupForm(forms.Form):
    username = forms.RegexField(label=_("Username"), regex=r"^[\w.@+-]{3,150}$", max_length=150)
    password = forms.CharField(label=_("Password"), widget=forms.PasswordInput, min_length=8)
