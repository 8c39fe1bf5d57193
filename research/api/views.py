"""The API tokens settings page: create a token (shown once), revoke one."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from research.api import selectors, services
from research.ratelimit import ratelimited


class TokenCreateForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Token name"), max_length=100,
                           widget=forms.TextInput(attrs={"placeholder": gettext_lazy("e.g. laptop script")}))


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


@login_required
@ratelimited("write", "WRITE_RATE")
def token_list(request: HttpRequest) -> HttpResponse:
    form = TokenCreateForm(request.POST or None)
    secret = ""
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                _token, secret = services.token_create(user=_user(request), name=form.cleaned_data["name"])
            except ValidationError as exc:
                form.add_error(None, exc)
        if form.errors:
            status = 400
        else:
            form = TokenCreateForm()
    tokens = selectors.token_list_for_user(user=_user(request))
    # The secret is rendered in this one response only; it is not stored anywhere.
    response = render(request, "api/tokens.html", {"form": form, "tokens": tokens, "secret": secret},
                      status=status)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = services.token_revoke(user=_user(request), token_id=token_id)
    messages.success(request, _("Token “%(name)s” revoked.") % {"name": token.name})
    return redirect("api_tokens")
