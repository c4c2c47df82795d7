"""The template page's chart of claims and uses per day, drawn here as inline SVG: no script,
nothing fetched, so the page works offline and in any browser."""

from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from backoffice.reports import DayActivity

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 24, 30  # margins for the axis labels and the legend
CLAIMS_COLOUR, USES_COLOUR = "#417690", "#70bf2b"


def activity_chart_svg(days: list[DayActivity]) -> SafeString:
    """Two bars a day (claims, uses) on a shared scale, each bar with a tooltip."""
    if not days:
        return format_html("<p>{}</p>", _("No days to show yet."))
    top_value = max(1, *(max(day.claims, day.uses) for day in days))
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_width / len(days)
    bar = min(24.0, max(1.0, slot * 0.4))

    def bar_rect(day: DayActivity, series: str, count: int, offset: float, colour: str) -> tuple:
        height = plot_height * count / top_value
        x = LEFT + slot * index_of[day.day] + offset
        label = f"{date_format(day.day, 'Y-m-d')}: {count} {series}"
        return (
            series,
            day.day.isoformat(),
            count,
            f"{x:.1f}",
            f"{TOP + plot_height - height:.1f}",
            f"{bar:.1f}",
            f"{height:.1f}",
            colour,
            label,
        )

    index_of = {day.day: index for index, day in enumerate(days)}
    claims_label, uses_label = _("claims"), _("uses")
    bars = [bar_rect(day, claims_label, day.claims, slot * 0.1, CLAIMS_COLOUR) for day in days]
    bars += [bar_rect(day, uses_label, day.uses, slot * 0.1 + bar, USES_COLOUR) for day in days]
    rects = format_html_join(
        "",
        '<rect class="bar" data-series="{}" data-day="{}" data-count="{}" x="{}" y="{}" '
        'width="{}" height="{}" fill="{}"><title>{}</title></rect>',
        bars,
    )
    return format_html(
        '<svg class="activity-chart" role="img" aria-label="{title}" width="{w}" height="{h}" '
        'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg" font-size="11" '
        'font-family="sans-serif">'
        '<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#999"/>'
        '<text x="{label_x}" y="{top_y}" text-anchor="end">{top_value}</text>'
        '<text x="{label_x}" y="{base}" text-anchor="end">0</text>'
        '<text x="{left}" y="{date_y}">{first}</text>'
        '<text x="{right}" y="{date_y}" text-anchor="end">{last}</text>'
        '<rect x="{left}" y="4" width="10" height="10" fill="{claims_colour}"/>'
        '<text x="{legend_claims}" y="13">{claims}</text>'
        '<rect x="{legend_uses_box}" y="4" width="10" height="10" fill="{uses_colour}"/>'
        '<text x="{legend_uses}" y="13">{uses}</text>'
        "{rects}</svg>",
        title=_("Claims and uses per day"),
        w=WIDTH,
        h=HEIGHT,
        left=LEFT,
        right=WIDTH - RIGHT,
        base=TOP + plot_height,
        label_x=LEFT - 4,
        top_y=TOP + 8,
        top_value=top_value,
        date_y=HEIGHT - 8,
        first=date_format(days[0].day, "Y-m-d"),
        last=date_format(days[-1].day, "Y-m-d"),
        claims_colour=CLAIMS_COLOUR,
        uses_colour=USES_COLOUR,
        legend_claims=LEFT + 14,
        legend_uses_box=LEFT + 90,
        legend_uses=LEFT + 104,
        claims=claims_label,
        uses=uses_label,
        rects=rects,
    )
