"""The policy in the admin: a tenant's overrides validated against it, and a policy shown as a table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from zeromem.core.domain.policy import DEFAULT_POLICY, PolicyInvalid, policy_fields, policy_with_overrides
from zeromem.models import Tenant


class TenantForm(forms.ModelForm):
    class Meta:
        model = Tenant
        fields = ("name", "overrides", "allowed_models", "monthly_token_budget")
        help_texts = {"overrides": 'The tenant\'s policy, by section: {"clustering": {"cosine_floor": 0.6}, '
                                   '"canaries": {"enabled": false}}. What is not named keeps its default; the page '
                                   'shows the policy in effect (docs/configuration.md describes every field).'}

    def clean_overrides(self) -> Any:
        overrides = self.cleaned_data["overrides"]
        try:
            policy_with_overrides(overrides)
        except PolicyInvalid as invalid:
            raise forms.ValidationError(str(invalid)) from None
        return overrides


def policy_table(values: Mapping[str, Any]) -> SafeString:
    """A policy (as recorded: section → field → value) as rows "section.field  value", a value that differs from
    the default in bold with the default beside it."""
    if not values:
        return format_html("<p>{}</p>", "not recorded (a run from before runs recorded their policy)")
    rows = []
    for field in policy_fields():
        section, name = field.path.split(".")
        value = values.get(section, {}).get(name, field.default)
        changed = value != getattr(getattr(DEFAULT_POLICY, section), name)
        shown = format_html("<strong>{}</strong> (default {})", value, field.default) if changed else str(value)
        rows.append((field.path, shown, field.description))
    return format_html('<table class="policy"><tbody>{}</tbody></table>', format_html_join(
        "", '<tr><td><code>{}</code></td><td>{}</td><td class="help">{}</td></tr>', rows))
