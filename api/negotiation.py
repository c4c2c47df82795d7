"""DRF's content negotiation, its choice remembered (decision 1034)."""

from rest_framework.negotiation import DefaultContentNegotiation

# Choices kept at once; Accept is the client's to write, so a flood of new ones empties it.
KEPT_CHOICES = 256
_kept: dict[tuple, tuple[int, str]] = {}


class RememberedNegotiation(DefaultContentNegotiation):
    """The same Accept header, renderers and format choose the same renderer and media type
    each time, so DRF's choice is made once and remembered, by the renderer's place in the
    view's list: parsing the header on every request cost auth/me about 7% of its CPU. A
    request nothing suits is refused by DRF each time (406), never remembered."""

    def select_renderer(self, request, renderers, format_suffix=None):
        asked_format = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        key = (
            request.META.get("HTTP_ACCEPT", "*/*"),
            tuple(type(renderer) for renderer in renderers),
            asked_format,
        )
        kept = _kept.get(key)
        if kept is None:
            renderer, media_type = super().select_renderer(request, renderers, format_suffix)
            kept = (renderers.index(renderer), media_type)
            if len(_kept) >= KEPT_CHOICES:
                _kept.clear()
            _kept[key] = kept
        place, media_type = kept
        return renderers[place], media_type
