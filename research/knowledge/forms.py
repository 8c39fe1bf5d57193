from __future__ import annotations

from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.utils.translation import gettext_lazy as _

from research.knowledge.extract import ALLOWED_EXTENSIONS
from research.knowledge.models import Collection


class CollectionForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=Collection._meta.get_field("name").max_length)
    description = forms.CharField(label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 2}))


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that takes several files at once (Django's documented pattern)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ",".join(ALLOWED_EXTENSIONS)}))
        # Empty files are refused per file by extraction, not for the whole form.
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple) and not data:
            data = None  # no file chosen: the "required" message, not an empty success
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class UploadForm(forms.Form):
    # The metaclass moves declared fields into base_fields, so this doesn't shadow Form.files.
    files = MultipleFileField(  # type: ignore[assignment]
        label=_("Files"),
        help_text=_("PDF, Markdown, plain text or HTML; several at once."),
        error_messages={"required": _("Choose at least one file.")},
    )


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search"), max_length=500, required=False)
