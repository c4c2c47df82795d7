"""How the API hands a response's body to the WSGI server."""

from collections.abc import Iterable

from django.http import HttpResponse


def body_in_one_part(response) -> Iterable[bytes]:
    """A body that is not streamed, as a list of one bytes: granian writes a list at once,
    while it walks any other iterable part by part, calling back into Python for each part
    and again to close it. A list has no close(), so the response is closed here (Django's
    request_finished). A streamed body (or a server's file wrapper) goes as it is."""
    if not isinstance(response, HttpResponse):  # streamed, or a server's file wrapper
        return response
    content = response.content
    response.close()
    return [content]
