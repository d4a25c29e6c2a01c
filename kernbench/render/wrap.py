"""A figure's footnote, its lines wrapped to the figure's width: matplotlib draws a line
past the right edge cut off, and a long `--only` or host name made the A/B's footnote
lose its end."""

from __future__ import annotations

from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

FOOTNOTE_PT = 7  # the footnotes' type size
FOOTNOTE_X = 0.01  # where a footnote starts, a fraction of the figure's width
SEPARATOR = "  ·  "
CONTINUED = "    "  # a broken line's indent, after its own


def wrap_footnote(text: str, width_in: float, dpi: float) -> str:
    """`text`, each line broken where it would pass the right edge of a figure `width_in`
    wide saved at `dpi`: between its `  ·  ` parts where it has them, else between words.
    Widths are measured as Agg draws them at that dpi, not guessed from a character count:
    its glyphs are hinted, and one line measured 8.2 in at 72 dpi, 9.2 at 110."""
    measure = _Measure(dpi)
    room = width_in * dpi * (1 - 2 * FOOTNOTE_X)
    return "\n".join(wrapped for line in text.split("\n")
                     for wrapped in _wrap_line(line, room, measure))


class _Measure:
    def __init__(self, dpi: float) -> None:
        self.renderer = RendererAgg(1, 1, dpi)
        self.font = FontProperties(size=FOOTNOTE_PT)

    def __call__(self, text: str) -> float:
        return float(self.renderer.get_text_width_height_descent(text, self.font, False)[0])


def _wrap_line(line: str, room: float, measure: _Measure) -> list[str]:
    if measure(line) <= room:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    pieces: list[tuple[str, str]] = []  # (what joins it to the piece before, the piece)
    for part in line.strip().split(SEPARATOR):
        joiner = SEPARATOR if pieces else ""
        if measure(indent + CONTINUED + part) <= room:
            pieces.append((joiner, part))
        else:  # a part too long for a line of its own: between its words
            pieces += [(joiner if i == 0 else " ", word) for i, word in enumerate(part.split())]
    lines = [indent + pieces[0][1]]
    for joiner, piece in pieces[1:]:
        if measure(lines[-1] + joiner + piece) <= room:
            lines[-1] += joiner + piece
        else:
            lines.append(indent + CONTINUED + piece)
    return lines
