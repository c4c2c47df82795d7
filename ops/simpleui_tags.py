"""simpleui's template tags (`{% load simpletags %}`, config/settings/base.py TEMPLATES), with
those that read the language or the zone answering for the request instead of for the
settings: simpleui loads its own and Element UI's texts for settings.LANGUAGE_CODE (English
here) whatever language the page is in, and writes every date filter's zone as +08:00
whatever TIME_ZONE says."""

from django import template
from django.utils import timezone, translation
from simpleui.templatetags import simpletags

register = template.Library()
register.tags.update(simpletags.register.tags)
register.filters.update(simpletags.register.filters)

# simpleui's locale files (static/admin/simpleui-x/locale/<name>.js) by Django language code.
SIMPLEUI_LOCALES = {"zh-hans": "zh-hans", "en": "en-us"}


@register.simple_tag(name="get_language")
def page_language() -> str:
    """The simpleui locale of the page's language (the cookie or Accept-Language)."""
    return SIMPLEUI_LOCALES.get(translation.get_language() or "en", "en-us")


@register.simple_tag(name="get_tz_suffix")
def time_zone_suffix() -> str:
    """The current zone's UTC offset now, as "+08:00"."""
    offset = timezone.localtime().strftime("%z")  # "+0800"
    return f"{offset[:3]}:{offset[3:]}"


@register.filter(name="get_config")
def setting_for_page(name: str):
    """simpleui's get_config, but LANGUAGE_CODE is the page's language."""
    if name == "LANGUAGE_CODE":
        return translation.get_language() or "en"
    return simpletags.get_config(name)
